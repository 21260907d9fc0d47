/*
 * The shared guard (src/exec/proc.c "the supervisor"): runs that close
 * the fds they inherit are guarded by a supervisor process shared by many
 * runs instead of a guard each.  What it must keep from the guard of its
 * own: a spawner killed with SIGKILL takes every run's tree with it
 * (SIGKILL after the grace for a tree deaf to SIGTERM), and when the
 * supervisor itself is killed, the runs it guarded go on, are handed to a
 * new one, and still die with the spawner; a run in this process whose
 * supervisor was killed ends normally with its output.  Time limits are
 * hang guards or the grace being measured.
 *
 * The test process is a child subreaper, as in test_proc.c, so that the
 * killed trees' orphans come back to it and can be proved gone.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/timeutil.h"
#include "exec/proc.h"

#define HANG_GUARD_MS 30000
#define RUNS 3

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* The dbcron-guard children of pid, into out[] (at most max). */
static int guards_of(pid_t pid, pid_t *out, int max)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int n = 0;
	assert_non_null(d);
	while ((e = readdir(d)) && n < max) {
		char path[300], buf[512];
		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		size_t len = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[len] = '\0';
		char *rp = strrchr(buf, ')');
		char st;
		int ppid;
		if (rp && strstr(buf, "(dbcron-guard)") && sscanf(rp + 1, " %c %d", &st, &ppid) == 2 &&
		    ppid == pid && st != 'Z')
			out[n++] = (pid_t)strtol(e->d_name, NULL, 10);
	}
	closedir(d);
	return n;
}

static int count_lines(const char *path)
{
	FILE *f = fopen(path, "r");
	int n = 0, c;
	if (!f)
		return 0;
	while ((c = fgetc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

static void wait_lines(const char *path, int n)
{
	int64_t until = dbcron__mono_ms() + HANG_GUARD_MS;
	while (count_lines(path) < n) {
		if (dbcron__mono_ms() > until)
			fail_msg("%s: fewer than %d lines", path, n);
		sleep_ms(5);
	}
}

static void read_pids(const char *path, pid_t *pids, int n)
{
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	for (int i = 0; i < n; i++) {
		long v = 0;
		assert_int_equal(fscanf(f, "%ld", &v), 1);
		pids[i] = (pid_t)v;
	}
	fclose(f);
}

/* Reap what came back to us until pid is gone for good. */
static void assert_pid_gone(pid_t pid)
{
	int64_t until = dbcron__mono_ms() + HANG_GUARD_MS;
	for (;;) {
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		if (kill(pid, 0) == -1 && errno == ESRCH)
			return;
		if (dbcron__mono_ms() > until)
			fail_msg("pid %d still exists", (int)pid);
		sleep_ms(5);
	}
}

/* Each run: its shell, a background sleep, a subshell's sleep (the
 * grandchild), one pid a line in its own file. */
#define TREE "echo $$ >> \"$1\"; sleep 100 & echo $! >> \"$1\"; " \
	"(sleep 100 & echo $! >> \"$1\"; wait) & "

static void spawn_shared_tree(proc *p, const char *path, bool deaf, int64_t grace_ms)
{
	dbcron_err err = {0};
	char *argv[] = {"sh", "-c",
			deaf ? "trap '' TERM; " TREE "while :; do sleep 1; done" : TREE "wait",
			"sh", (char *)path, NULL};
	/* close_fds and a cwd: what sends a run to a supervisor */
	proc_opts po = {.argv = argv, .stdin_null = true, .death_grace_ms = grace_ms,
			.close_fds = true, .cwd = "/"};
	if (proc_spawn(p, &po, &err) != DBCRON_OK)
		fail_msg("spawn: %s", err.msg);
}

/* A process that starts RUNS trees at once, then waits on them for ever
 * (until killed), so that each proc looks at its supervisor. */
static pid_t start_spawner(char paths[RUNS][32], bool deaf, int64_t grace_ms)
{
	pid_t sp = fork();
	assert_true(sp >= 0);
	if (sp == 0) {
		proc p[RUNS];
		prctl(PR_SET_PDEATHSIG, SIGKILL); /* a failed test leaves none behind */
		for (int i = 0; i < RUNS; i++)
			spawn_shared_tree(&p[i], paths[i], deaf, grace_ms);
		for (;;) {
			for (int i = 0; i < RUNS; i++)
				proc_wait_until(&p[i], dbcron__mono_ms() + 20);
			sleep_ms(5); /* an exited leader returns at once */
		}
	}
	return sp;
}

static void make_paths(char paths[RUNS][32])
{
	for (int i = 0; i < RUNS; i++) {
		snprintf(paths[i], 32, "/tmp/dbcron-guard-XXXXXX");
		int fd = mkstemp(paths[i]);
		assert_true(fd >= 0);
		close(fd);
	}
}

/* Every tree's 3 pids once all are written; the trees share no guard of
 * their own: no dbcron-guard is a member of any tree's group. */
static void read_trees(char paths[RUNS][32], pid_t tree[RUNS][3])
{
	for (int i = 0; i < RUNS; i++) {
		wait_lines(paths[i], 3);
		read_pids(paths[i], tree[i], 3);
		assert_int_equal(getpgid(tree[i][1]), tree[i][0]);
	}
}

static void assert_trees_gone(char paths[RUNS][32], pid_t tree[RUNS][3])
{
	for (int i = 0; i < RUNS; i++) {
		for (int j = 0; j < 3; j++)
			assert_pid_gone(tree[i][j]);
		unlink(paths[i]);
	}
}

/* A killed spawner's supervisors come back to us (the subreaper) and end
 * once they have stopped its trees, maybe after the trees are gone: each
 * is waited for and reaped here, or a later test's "nothing left to reap"
 * met its zombie (CI's TSan run, test_run_outlives_supervisor). */
static void assert_guards_gone(const pid_t *g, int n)
{
	for (int i = 0; i < n; i++)
		assert_pid_gone(g[i]);
}

/* kill -9 of the spawner: every run's tree goes, after the grace when the
 * trees ignore SIGTERM. */
static void test_spawner_killed(void **state)
{
	(void)state;
	for (int deaf = 0; deaf <= 1; deaf++) {
		char paths[RUNS][32];
		pid_t tree[RUNS][3], g[8];
		make_paths(paths);
		pid_t sp = start_spawner(paths, deaf, 400);
		read_trees(paths, tree);
		int ng = guards_of(sp, g, 8);
		assert_true(ng >= 1); /* shared: the spawner's children */
		int64_t t0 = dbcron__mono_ms();
		kill(sp, SIGKILL);
		assert_int_equal(waitpid(sp, NULL, 0), sp);
		assert_trees_gone(paths, tree);
		int64_t took = dbcron__mono_ms() - t0;
		if (deaf)
			assert_true(took >= 400);
		assert_true(took < HANG_GUARD_MS);
		assert_guards_gone(g, ng);
	}
}

/* kill -9 of the supervisors under running trees: the spawner hands the
 * groups to new ones, which then stop them when the spawner is killed. */
static void test_supervisor_killed(void **state)
{
	(void)state;
	char paths[RUNS][32];
	pid_t tree[RUNS][3], g[8], g2[8];
	make_paths(paths);
	pid_t sp = start_spawner(paths, false, 400);
	read_trees(paths, tree);
	int n = guards_of(sp, g, 8);
	assert_true(n >= 1);
	for (int i = 0; i < n; i++)
		kill(g[i], SIGKILL);
	/* new ones, none of the killed */
	int64_t until = dbcron__mono_ms() + HANG_GUARD_MS;
	for (;;) {
		int m = guards_of(sp, g2, 8), old = 0;
		for (int i = 0; i < m; i++)
			for (int j = 0; j < n; j++)
				old += g2[i] == g[j];
		if (m >= 1 && old == 0)
			break;
		if (dbcron__mono_ms() > until)
			fail_msg("no new supervisor after the old ones were killed");
		sleep_ms(5);
	}
	for (int i = 0; i < RUNS; i++)
		for (int j = 0; j < 3; j++)
			assert_int_equal(kill(tree[i][j], 0), 0); /* the runs went on */
	sleep_ms(100); /* room for every proc to hand its group over */
	int m = guards_of(sp, g2, 8);
	kill(sp, SIGKILL);
	assert_int_equal(waitpid(sp, NULL, 0), sp);
	assert_trees_gone(paths, tree);
	assert_guards_gone(g2, m);
}

struct out {
	char buf[256];
	size_t len;
};

static void sink(void *ctx, const char *buf, size_t n)
{
	struct out *o = ctx;
	size_t k = sizeof(o->buf) - 1 - o->len;
	if (k > n)
		k = n;
	memcpy(o->buf + o->len, buf, k);
	o->len += k;
	o->buf[o->len] = '\0';
}

/* In this process: the supervisor killed while a run goes on; the run
 * ends as it would have, its output whole, and nothing is left to reap. */
static void test_run_outlives_supervisor(void **state)
{
	(void)state;
	struct out o = {.len = 0};
	dbcron_err err = {0};
	proc p;
	pid_t g[8];
	int status;
	char *argv[] = {"sh", "-c", "echo one; sleep 0.5; echo two", NULL};
	proc_opts po = {.argv = argv, .stdin_null = true, .sink = sink, .sink_ctx = &o,
			.close_fds = true, .cwd = "/"};
	if (proc_spawn(&p, &po, &err) != DBCRON_OK)
		fail_msg("spawn: %s", err.msg);
	int n = guards_of(getpid(), g, 8);
	assert_true(n >= 1);
	for (int i = 0; i < n; i++)
		kill(g[i], SIGKILL);
	assert_true(proc_wait_until(&p, dbcron__mono_ms() + HANG_GUARD_MS));
	assert_int_equal(proc_reap(&p, &status), 0);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_string_equal(o.buf, "one\ntwo\n");
	/* the last run ended: no supervisor of ours is left */
	assert_int_equal(guards_of(getpid(), g, 8), 0);
	errno = 0;
	assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
	assert_int_equal(errno, ECHILD);
}

int main(void)
{
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	if (!proc_guard_helper()) {
		fprintf(stderr, "test_thr_guard: no dbcron-guard (set DBCRON_GUARD): skipped\n");
		return 77;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spawner_killed),
		cmocka_unit_test(test_supervisor_killed),
		cmocka_unit_test(test_run_outlives_supervisor),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
