/*
 * Shell executor benchmark: the cost of one run of `true` through
 * exec_run (spawn, wait, reap, capture), on 1 and on 2 threads.
 *   bench_shell [RUNS] [BALLAST_MB] [THREADS]
 * With THREADS, RUNS runs of /bin/true in all, shared by THREADS threads
 * (`bench_shell 10000 0 8` is the executor's side of `seq 10000 | xargs
 * -P8 -n1 /bin/true`, docs/benchmarks.md), and nothing else.
 * BALLAST_MB (default 0) allocates and touches that much memory first, so
 * that the process looks like a node with a warm heap: anything that
 * copies the address space (fork) gets dearer with it, posix_spawn does
 * not.  Each run also starts a guard (src/exec/proc.c): the dbcron-guard
 * program named by $DBCRON_GUARD, else a fork of this process (this
 * binary has no dbcron-guard next to it).  Reports; never fails on a
 * figure.
 */
#define _GNU_SOURCE /* __WALL */
#include <dirent.h>
#include <inttypes.h>
#include <signal.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/timeutil.h"
#include "exec/exec.h"
#include "exec/proc.h"

typedef struct arg {
	long runs;
	long failed;
	char *cmd;
} arg;

static void *worker(void *p)
{
	arg *a = p;
	char *argv[] = {a->cmd, NULL};
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

#define MAX_THREADS 64

/* Our children still alive at the end (the guards' supervisors) are
 * killed and reaped, so that a timer of the whole process, which counts
 * the CPU time of the children it waited for, counts theirs too. */
static int reap_helpers(void)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int n = 0;
	if (!d)
		return 0;
	while ((e = readdir(d))) {
		char path[300], buf[512];
		snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
		FILE *f = e->d_name[0] >= '1' && e->d_name[0] <= '9' ? fopen(path, "r") : NULL;
		if (!f)
			continue;
		size_t len = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[len] = '\0';
		char *rp = strrchr(buf, ')');
		char st;
		int ppid;
		if (rp && sscanf(rp + 1, " %c %d", &st, &ppid) == 2 && ppid == getpid()) {
			pid_t pid = (pid_t)strtol(e->d_name, NULL, 10);
			kill(pid, SIGKILL);
			n += waitpid(pid, NULL, __WALL) == pid;
		}
	}
	closedir(d);
	return n;
}

/* runs each on `threads` threads, or `total` shared by them when > 0 */
static void run(int threads, long runs, long total, char *cmd)
{
	pthread_t th[MAX_THREADS];
	arg a[MAX_THREADS];
	long failed = 0;
	if (total > 0)
		runs = total / threads;
	for (int i = 0; i < threads; i++)
		a[i] = (arg){runs + (total > 0 && i < total % threads ? 1 : 0), 0, cmd};
	total = 0;
	int64_t t0 = dbcron__mono_ms();
	for (int i = 0; i < threads; i++)
		pthread_create(&th[i], NULL, worker, &a[i]);
	for (int i = 0; i < threads; i++) {
		pthread_join(th[i], NULL);
		failed += a[i].failed;
		total += a[i].runs;
	}
	int64_t ms = dbcron__mono_ms() - t0;
	printf("shell `%s`: %d thread%s, %ld runs in %" PRId64 " ms: %.3f ms per run per thread, "
	       "%.0f runs/s (%ld failed)\n",
	       cmd, threads, threads > 1 ? "s" : "", total, ms, (double)ms * threads / (double)total,
	       ms > 0 ? total * 1000.0 / (double)ms : 0.0, failed);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	long runs = argc > 1 ? strtol(argv[1], NULL, 10) : 2000;
	long ballast_mb = argc > 2 ? strtol(argv[2], NULL, 10) : 0;
	long threads = argc > 3 ? strtol(argv[3], NULL, 10) : 0;
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
	if (threads > 0) {
		run(threads < MAX_THREADS ? (int)threads : MAX_THREADS, 0, runs, "/bin/true");
	} else {
		run(1, runs, 0, "true");
		run(2, runs, 0, "true");
	}
	dbcron__free(ballast);
	printf("helper processes reaped at the end: %d\n", reap_helpers());
	return 0;
}
