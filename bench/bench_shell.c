/*
 * Shell executor benchmark: the cost of one run of `true` through
 * exec_run (spawn, wait, reap, capture), on 1 and on 2 threads.
 *   bench_shell [RUNS] [BALLAST_MB]
 * BALLAST_MB (default 0) allocates and touches that much memory first, so
 * that the process looks like a node with a warm heap: anything that
 * copies the address space (fork) gets dearer with it, posix_spawn does
 * not.  Each run also starts a guard (src/exec/proc.c): the dbcron-guard
 * program named by $DBCRON_GUARD, else a fork of this process (this
 * binary has no dbcron-guard next to it).  Reports; never fails on a
 * figure.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/timeutil.h"
#include "exec/exec.h"
#include "exec/proc.h"

typedef struct arg {
	long runs;
	long failed;
} arg;

static void *worker(void *p)
{
	arg *a = p;
	char *argv[] = {"true", NULL};
	dbcron_job job;
	dbcron_job_init(&job);
	job.name = "bench";
	job.executor = DBCRON_EXEC_SHELL;
	job.argv = argv;
	job.argc = 1;
	for (long i = 0; i < a->runs; i++) {
		exec_req req = {.job = &job, .run_id = i, .attempt = 1, .node_id = "bench"};
		exec_result r;
		exec_run(&req, &r);
		if (r.state != DBCRON_RUN_SUCCEEDED)
			a->failed++;
		exec_result_clear(&r);
	}
	return NULL;
}

static void run(int threads, long runs)
{
	pthread_t th[2];
	arg a[2] = {{runs, 0}, {runs, 0}};
	int64_t t0 = dbcron__mono_ms();
	for (int i = 0; i < threads; i++)
		pthread_create(&th[i], NULL, worker, &a[i]);
	for (int i = 0; i < threads; i++)
		pthread_join(th[i], NULL);
	int64_t ms = dbcron__mono_ms() - t0;
	long total = runs * threads;
	printf("shell `true`: %d thread%s, %ld runs in %" PRId64 " ms: %.3f ms per run per thread, "
	       "%.0f runs/s (%ld failed)\n",
	       threads, threads > 1 ? "s" : "", total, ms, (double)ms * threads / (double)total,
	       ms > 0 ? total * 1000.0 / (double)ms : 0.0, a[0].failed + a[1].failed);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	long runs = argc > 1 ? strtol(argv[1], NULL, 10) : 2000;
	long ballast_mb = argc > 2 ? strtol(argv[2], NULL, 10) : 0;
	char *ballast = NULL;

	if (runs < 1)
		runs = 1;
	if (ballast_mb > 0) {
		size_t n = (size_t)ballast_mb << 20;
		ballast = dbcron__malloc(n);
		if (!ballast) {
			fprintf(stderr, "bench_shell: cannot allocate %ld MB\n", ballast_mb);
			return 1;
		}
		memset(ballast, 1, n);
	}
	const char *helper = proc_guard_helper();
	printf("bench_shell: ballast %ld MB, guards: %s\n", ballast_mb,
	       helper ? helper : "fork (set DBCRON_GUARD=.../dbcron-guard for the helper)");
	run(1, runs);
	run(2, runs);
	dbcron__free(ballast);
	return 0;
}
