/*
 * Lease lock benchmark: acquire + release cycles per second, uncontended
 * (one process, one name) and with 8 contending processes on one name.
 *   bench_lock URL [SECONDS]
 * The database must exist with its schema (dbcron init).  Reports; never
 * fails on a figure.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/timeutil.h"
#include "dbcron/lock.h"

typedef struct counts {
	long cycles, refused, errors;
} counts;

static counts loop(const char *url, const char *name, const char *owner, double secs)
{
	counts c = {0};
	dbcron_db *db;
	dbcron_err err = {0};
	if (dbcron_db_open(url, &db, &err)) {
		fprintf(stderr, "bench_lock: %s\n", err.msg);
		c.errors++;
		return c;
	}
	int64_t end = dbcron__mono_ms() + (int64_t)(secs * 1000);
	while (dbcron__mono_ms() < end) {
		dbcron_lease l, h;
		int rc = dbcron_lock_acquire(db, name, owner, 30000, &l, &h, &err);
		if (rc == DBCRON_ELOCKED) {
			c.refused++;
			continue;
		}
		if (rc) {
			c.errors++;
			continue;
		}
		if (dbcron_lock_release(db, &l, &err))
			c.errors++;
		else
			c.cycles++;
	}
	dbcron_db_close(db);
	return c;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: bench_lock URL [SECONDS]\n");
		return 2;
	}
	const char *url = argv[1];
	double secs = argc > 2 ? strtod(argv[2], NULL) : 10;

	counts c = loop(url, "bench-solo", "solo", secs);
	printf("lock uncontended: %.0f acquire+release cycles/s (%ld cycles, %ld errors)\n",
	       c.cycles / secs, c.cycles, c.errors);
	fflush(stdout);

	enum { N = 8 };
	int fds[N][2];
	pid_t pids[N];
	for (int i = 0; i < N; i++) {
		if (pipe(fds[i]))
			return 1;
		pids[i] = fork();
		if (pids[i] == 0) {
			char owner[32];
			snprintf(owner, sizeof(owner), "c%d", i);
			counts r = loop(url, "bench-shared", owner, secs);
			ssize_t w = write(fds[i][1], &r, sizeof(r));
			_exit(w == (ssize_t)sizeof(r) ? 0 : 1);
		}
		close(fds[i][1]);
	}
	counts t = {0};
	for (int i = 0; i < N; i++) {
		counts r = {0};
		if (read(fds[i][0], &r, sizeof(r)) == (ssize_t)sizeof(r)) {
			t.cycles += r.cycles;
			t.refused += r.refused;
			t.errors += r.errors;
		}
		close(fds[i][0]);
		waitpid(pids[i], NULL, 0);
	}
	printf("lock 8 contenders on one name: %.0f successful cycles/s, %.0f refused attempts/s (%ld errors)\n",
	       t.cycles / secs, t.refused / secs, t.errors);
	return 0;
}
