/*
 * The process module against real processes: a normal exit with its
 * output, exec failures, the group stop that reaches a grandchild which
 * ignores SIGTERM (SIGKILL after the grace, or at once when the leader is
 * gone), deadline and cancel, signals forwarded to a stopped group, the
 * signal dispositions a child starts with, and fd hygiene.  Time limits
 * are hang guards or the grace being measured, with wide margins.
 *
 * Then the guard: a spawner killed with SIGKILL takes its tree with it
 * (after the grace when the tree ignores SIGTERM), a spawning thread that
 * exits does not, and the guard's own shape (group member, no fds of
 * ours, reaped).  CTest runs this file twice: guards in dbcron-guard, and
 * forked (DBCRON_GUARD=fork).
 *
 * The test process is a child subreaper: grandchildren orphaned by a
 * killed group come back to it, so it can reap them and prove they died
 * whatever PID 1 of the container does with zombies.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
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

struct out {
	char buf[4096];
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

static void spawn_ok(proc *p, char **argv, struct out *o)
{
	dbcron_err err = {0};
	proc_opts po = {.argv = argv, .stdin_null = true, .sink = o ? sink : NULL, .sink_ctx = o};
	if (o)
		memset(o, 0, sizeof(*o));
	int rc = proc_spawn(p, &po, &err);
	if (rc != DBCRON_OK)
		fail_msg("spawn %s: %s", argv[0], err.msg);
	assert_true(p->pid > 0);
	assert_int_equal(getpgid(p->pid), p->pid);
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

static int count_fds(void)
{
	int n = 0;
	DIR *d = opendir("/proc/self/fd");
	assert_non_null(d);
	struct dirent *e;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

/* Reap orphans that came back to us until pid is gone for good. */
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

static void assert_group_gone(pid_t pgid)
{
	int64_t until = dbcron__mono_ms() + HANG_GUARD_MS;
	for (;;) {
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		if (kill(-pgid, 0) == -1 && errno == ESRCH)
			return;
		if (dbcron__mono_ms() > until)
			fail_msg("process group %d still has members", (int)pgid);
		sleep_ms(5);
	}
}

static pid_t wait_pid_file(const char *path)
{
	int64_t until = dbcron__mono_ms() + HANG_GUARD_MS;
	for (;;) {
		long pid = 0;
		FILE *f = fopen(path, "r");
		if (f) {
			int n = fscanf(f, "%ld", &pid);
			fclose(f);
			if (n == 1 && pid > 1)
				return (pid_t)pid;
		}
		if (dbcron__mono_ms() > until)
			fail_msg("no pid in %s", path);
		sleep_ms(5);
	}
}

/* Until pid runs the program named comm (it has exec'd: traps are set). */
static void wait_comm(pid_t pid, const char *comm)
{
	char path[64], buf[64];
	int64_t until = dbcron__mono_ms() + HANG_GUARD_MS;
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	for (;;) {
		FILE *f = fopen(path, "r");
		if (f) {
			bool ok = fgets(buf, sizeof(buf), f) && strncmp(buf, comm, strlen(comm)) == 0;
			fclose(f);
			if (ok)
				return;
		}
		if (dbcron__mono_ms() > until)
			fail_msg("pid %d never ran %s", (int)pid, comm);
		sleep_ms(5);
	}
}

static void test_normal_exit(void **state)
{
	(void)state;
	proc p;
	struct out o;
	int status;
	int before = count_fds();

	spawn_ok(&p, (char *[]){"sh", "-c", "echo out; echo err >&2; exit 3", NULL}, &o);
	assert_int_equal(proc_wait(&p, INT64_MAX, NULL, 0, NULL), PROC_END_EXIT);
	assert_true(p.exited);
	assert_false(p.stopping);
	assert_int_equal(proc_reap(&p, &status), 0);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 3);
	assert_int_equal(proc_exit_code(status), 3);
	assert_string_equal(o.buf, "out\nerr\n");
	assert_int_equal(p.pid, -1);
	assert_int_equal(count_fds(), before);

	/* stdin is /dev/null: cat ends at once. */
	spawn_ok(&p, (char *[]){"cat", NULL}, &o);
	assert_int_equal(proc_wait(&p, dbcron__mono_ms() + HANG_GUARD_MS, NULL, 0, NULL), PROC_END_EXIT);
	assert_int_equal(proc_reap(&p, &status), 0);
	assert_int_equal(proc_exit_code(status), 0);
	assert_int_equal(o.len, 0);

	/* Without a sink nothing is piped: no fd of ours to read. */
	spawn_ok(&p, (char *[]){"true", NULL}, NULL);
	assert_int_equal(p.out_fd, -1);
	assert_int_equal(proc_wait(&p, INT64_MAX, NULL, 0, NULL), PROC_END_EXIT);
	assert_int_equal(proc_reap(&p, &status), 0);
	assert_int_equal(proc_exit_code(status), 0);
	assert_int_equal(count_fds(), before);
}

static void test_exec_failure(void **state)
{
	(void)state;
	proc p;
	dbcron_err err = {0};
	int before = count_fds();

	proc_opts po = {.argv = (char *[]){"nosuchcmd", NULL}, .sink = sink, .sink_ctx = NULL};
	assert_int_equal(proc_spawn(&p, &po, &err), DBCRON_ENOTFOUND);
	assert_string_equal(err.msg, "cannot execute 'nosuchcmd': No such file or directory");
	assert_int_equal(p.pid, -1);
	assert_int_equal(p.out_fd, -1);

	po.argv = (char *[]){"/nonexistent/dir/tool", NULL};
	assert_int_equal(proc_spawn(&p, &po, &err), DBCRON_ENOTFOUND);
	assert_string_equal(err.msg, "cannot execute '/nonexistent/dir/tool': No such file or directory");

	po.argv = (char *[]){"/dev/null", NULL};
	assert_int_equal(proc_spawn(&p, &po, &err), DBCRON_EIO);
	assert_string_equal(err.msg, "cannot execute '/dev/null': Permission denied");

	po.argv = (char *[]){"", NULL};
	assert_int_equal(proc_spawn(&p, &po, &err), DBCRON_EINVAL);
	po.argv = NULL;
	assert_int_equal(proc_spawn(&p, &po, &err), DBCRON_EINVAL);
	assert_int_equal(count_fds(), before);
	errno = 0;
	assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
	assert_int_equal(errno, ECHILD);
}

/* Leader and grandchild ignore SIGTERM: only the SIGKILL after the grace
 * ends them, and it reaches the grandchild through the group. */
static void test_stop_escalates_to_kill(void **state)
{
	(void)state;
	char path[] = "/tmp/dbcron-proc-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	proc p;
	struct out o;
	int status;

	spawn_ok(&p, (char *[]){"sh", "-c",
				"trap '' TERM; sleep 100 & echo $! > \"$1\"; echo started; "
				"while :; do sleep 1; done", "sh", path, NULL}, &o);
	pid_t grandchild = wait_pid_file(path);
	assert_int_equal(getpgid(grandchild), p.pid);
	assert_false(proc_wait_until(&p, dbcron__mono_ms() + 100)); /* still running */

	int64_t t0 = dbcron__mono_ms();
	proc_stop(&p, 400);
	proc_stop(&p, 1); /* only the first call counts */
	assert_true(proc_wait_until(&p, t0 + HANG_GUARD_MS));
	int64_t took = dbcron__mono_ms() - t0;
	assert_true(p.killed);
	assert_int_equal(proc_reap(&p, &status), 0);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGKILL);
	assert_int_equal(proc_exit_code(status), 128 + SIGKILL);
	assert_true(took >= 400);
	assert_true(took < HANG_GUARD_MS);
	assert_string_equal(o.buf, "started\n");
	assert_pid_gone(grandchild);
	unlink(path);
}

/* The leader dies of SIGTERM; the grandchild ignores it and gets SIGKILL
 * at once, not after the (long) grace. */
static void test_straggler_killed_with_leader(void **state)
{
	(void)state;
	char path[] = "/tmp/dbcron-proc-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	proc p;
	int status;

	spawn_ok(&p, (char *[]){"sh", "-c",
				"(trap '' TERM; exec sleep 100) & echo $! > \"$1\"; wait",
				"sh", path, NULL}, NULL);
	pid_t grandchild = wait_pid_file(path);
	wait_comm(grandchild, "sleep");
	int64_t t0 = dbcron__mono_ms();
	proc_stop(&p, 20000);
	assert_true(proc_wait_until(&p, t0 + HANG_GUARD_MS));
	assert_true(p.killed);
	assert_int_equal(proc_reap(&p, &status), 0);
	assert_int_equal(proc_exit_code(status), 128 + SIGTERM);
	assert_pid_gone(grandchild);
	assert_true(dbcron__mono_ms() - t0 < 10000);
	unlink(path);
}

static void test_deadline_and_cancel(void **state)
{
	(void)state;
	proc p;
	int status;

	int64_t t0 = dbcron__mono_ms();
	spawn_ok(&p, (char *[]){"sleep", "100", NULL}, NULL);
	assert_int_equal(proc_wait(&p, t0 + 200, NULL, 300, NULL), PROC_END_TIMEOUT);
	assert_int_equal(proc_reap(&p, &status), 0);
	assert_int_equal(proc_exit_code(status), 128 + SIGTERM);
	assert_true(dbcron__mono_ms() - t0 >= 200);

	atomic_int cancel = 1;
	spawn_ok(&p, (char *[]){"sleep", "100", NULL}, NULL);
	assert_int_equal(proc_wait(&p, INT64_MAX, &cancel, 300, NULL), PROC_END_CANCEL);
	assert_int_equal(proc_reap(&p, &status), 0);
	assert_int_equal(proc_exit_code(status), 128 + SIGTERM);

	/* An exit before the deadline is an exit, whatever the flag later. */
	atomic_store(&cancel, 0);
	spawn_ok(&p, (char *[]){"true", NULL}, NULL);
	assert_int_equal(proc_wait(&p, dbcron__mono_ms() + HANG_GUARD_MS, &cancel, 0, NULL), PROC_END_EXIT);
	assert_int_equal(proc_reap(&p, &status), 0);
}

/* A forwarded signal reaches a stopped group (SIGCONT follows it), and
 * proc_kill_after() ends what ignores it. */
static void test_signal_and_kill_after(void **state)
{
	(void)state;
	proc p;
	int status;

	spawn_ok(&p, (char *[]){"sleep", "100", NULL}, NULL);
	kill(p.pid, SIGSTOP);
	proc_signal(&p, SIGINT);
	assert_true(proc_wait_until(&p, dbcron__mono_ms() + HANG_GUARD_MS));
	assert_false(p.killed);
	assert_int_equal(proc_reap(&p, &status), 0);
	assert_int_equal(proc_exit_code(status), 128 + SIGINT);

	spawn_ok(&p, (char *[]){"sh", "-c", "trap '' INT; while :; do sleep 1; done", NULL}, NULL);
	sleep_ms(100); /* the trap is set */
	proc_signal(&p, SIGINT);
	assert_false(proc_wait_until(&p, dbcron__mono_ms() + 200)); /* ignored */
	proc_kill_after(&p, 100);
	assert_true(proc_wait_until(&p, dbcron__mono_ms() + HANG_GUARD_MS));
	assert_true(p.killed);
	assert_int_equal(proc_reap(&p, &status), 0);
	assert_int_equal(proc_exit_code(status), 128 + SIGKILL);
}

/* By default the child starts with every signal at its default; with
 * inherit_signals our ignored ones stay ignored (nohup). */
static void test_signal_dispositions(void **state)
{
	(void)state;
	proc p;
	struct out o;
	dbcron_err err = {0};
	int status;
	char *argv[] = {"sh", "-c", "kill -HUP $$; echo alive", NULL};

	signal(SIGHUP, SIG_IGN);
	spawn_ok(&p, argv, &o);
	assert_int_equal(proc_wait(&p, INT64_MAX, NULL, 0, NULL), PROC_END_EXIT);
	assert_int_equal(proc_reap(&p, &status), 0);
	assert_int_equal(proc_exit_code(status), 128 + SIGHUP);

	memset(&o, 0, sizeof(o));
	proc_opts po = {.argv = argv, .sink = sink, .sink_ctx = &o, .inherit_signals = true};
	assert_int_equal(proc_spawn(&p, &po, &err), DBCRON_OK);
	assert_int_equal(proc_wait(&p, INT64_MAX, NULL, 0, NULL), PROC_END_EXIT);
	assert_int_equal(proc_reap(&p, &status), 0);
	signal(SIGHUP, SIG_DFL);
	assert_int_equal(proc_exit_code(status), 0);
	assert_string_equal(o.buf, "alive\n");
}

/* Someone else reaped the leader: the status is lost, said so, no hang. */
static void test_status_lost(void **state)
{
	(void)state;
	proc p;
	int status;

	spawn_ok(&p, (char *[]){"true", NULL}, NULL);
	assert_int_equal(waitpid(p.pid, &status, 0), p.pid);
	assert_true(proc_wait_until(&p, dbcron__mono_ms() + HANG_GUARD_MS));
	assert_int_equal(proc_reap(&p, &status), ECHILD);
}

/* ---- the guard: the group does not outlive the process that spawned it ---- */

static int count_fds_of(pid_t pid)
{
	char path[64];
	int n = 0;
	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	DIR *d = opendir(path);
	assert_non_null(d);
	struct dirent *e;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

static pid_t read_pid_line(const char *path, int line)
{
	FILE *f = fopen(path, "r");
	long pid = 0;
	assert_non_null(f);
	for (int i = 0; i <= line; i++)
		assert_int_equal(fscanf(f, "%ld", &pid), 1);
	fclose(f);
	return (pid_t)pid;
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

/* The script every spawner below runs: its pid, a background sleep's and
 * a grandchild's, one a line in $1; a fourth line once all are started. */
#define TREE_SCRIPT "echo $$ >> \"$1\"; sleep 100 & echo $! >> \"$1\"; " \
	"(sleep 100 & echo $! >> \"$1\"; wait) & echo $! >> \"$1\"; "

static void spawn_tree(proc *p, const char *path, bool deaf, int64_t grace_ms)
{
	dbcron_err err = {0};
	char *argv[] = {"sh", "-c",
			deaf ? "trap '' TERM; " TREE_SCRIPT "while :; do sleep 1; done"
			     : TREE_SCRIPT "wait",
			"sh", (char *)path, NULL};
	proc_opts po = {.argv = argv, .stdin_null = true, .death_grace_ms = grace_ms};
	if (proc_spawn(p, &po, &err) != DBCRON_OK)
		fail_msg("spawn: %s", err.msg);
}

/* A spawner process that starts the tree and then waits for ever (until
 * the test kills it with SIGKILL, which no code of ours sees). */
static pid_t start_spawner(const char *path, bool deaf, int64_t grace_ms)
{
	pid_t sp = fork();
	assert_true(sp >= 0);
	if (sp == 0) {
		proc p;
		spawn_tree(&p, path, deaf, grace_ms);
		for (;;)
			proc_wait_until(&p, INT64_MAX);
	}
	return sp;
}

static void make_tmp(char *path)
{
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
}

static void test_spawner_killed(void **state)
{
	(void)state;
	for (int deaf = 0; deaf <= 1; deaf++) {
		char path[] = "/tmp/dbcron-proc-XXXXXX";
		make_tmp(path);
		pid_t sp = start_spawner(path, deaf, 400);
		wait_lines(path, 4);
		pid_t tree[4];
		for (int i = 0; i < 4; i++) {
			tree[i] = read_pid_line(path, i);
			assert_int_equal(getpgid(tree[i]), tree[0]);
		}
		int64_t t0 = dbcron__mono_ms();
		kill(sp, SIGKILL);
		assert_int_equal(waitpid(sp, NULL, 0), sp);
		for (int i = 0; i < 4; i++)
			assert_pid_gone(tree[i]);
		int64_t took = dbcron__mono_ms() - t0;
		/* Deaf to SIGTERM: only the SIGKILL after the grace ends it. */
		if (deaf)
			assert_true(took >= 400);
		assert_true(took < HANG_GUARD_MS);
		/* Nothing of the group is left, the guard included (it leaves
		 * last, after the tree: poll, as for the tree). */
		assert_group_gone(tree[0]);
		unlink(path);
	}
}

struct thread_spawn {
	proc p;
	const char *path;
};

static void *spawn_on_thread(void *arg)
{
	struct thread_spawn *ts = arg;
	spawn_tree(&ts->p, ts->path, false, 300);
	return NULL; /* the thread that forked the guard exits here */
}

/* PR_SET_PDEATHSIG fires when the *thread* that forked exits: that must
 * not stop the job, and the guard must still act when the process dies
 * later (the signal comes again when it is reparented). */
static void test_spawning_thread_exits(void **state)
{
	(void)state;
	char path[] = "/tmp/dbcron-proc-XXXXXX";
	char verdict[] = "/tmp/dbcron-proc-XXXXXX";
	make_tmp(path);
	make_tmp(verdict);

	pid_t sp = fork();
	assert_true(sp >= 0);
	if (sp == 0) {
		struct thread_spawn ts = {.path = path};
		pthread_t th;
		if (pthread_create(&th, NULL, spawn_on_thread, &ts) != 0 || pthread_join(th, NULL) != 0)
			_exit(1);
		/* Room for a wrong SIGTERM to land: sleep dies of it at once. */
		sleep_ms(300);
		FILE *f = fopen(verdict, "w");
		bool alive = kill(ts.p.pid, 0) == 0 && !proc_wait_until(&ts.p, dbcron__mono_ms());
		fprintf(f, "%s\n", alive ? "alive" : "stopped");
		fclose(f);
		for (;;)
			proc_wait_until(&ts.p, INT64_MAX);
	}
	wait_lines(verdict, 1);
	FILE *f = fopen(verdict, "r");
	char word[16] = "";
	assert_int_equal(fscanf(f, "%15s", word), 1);
	fclose(f);
	assert_string_equal(word, "alive");
	wait_lines(path, 4);
	pid_t tree[4];
	for (int i = 0; i < 4; i++)
		tree[i] = read_pid_line(path, i);
	kill(sp, SIGKILL);
	assert_int_equal(waitpid(sp, NULL, 0), sp);
	for (int i = 0; i < 4; i++)
		assert_pid_gone(tree[i]);
	unlink(path);
	unlink(verdict);
}

/* The guard is a member of the group, keeps no fd of ours, goes with
 * proc_reap; a descriptor we leave inheritable still reaches the command,
 * as it did with posix_spawn (`exec 9>lock; dbcron lock ...`). */
static void test_guard_shape(void **state)
{
	(void)state;
	proc p;
	int status;
	char path[] = "/tmp/dbcron-proc-XXXXXX";
	make_tmp(path);
	int keep = open("/dev/null", O_RDONLY); /* not O_CLOEXEC */
	assert_true(keep > 2);
	char script[128];
	snprintf(script, sizeof(script), "test -e /proc/self/fd/%d && echo $$ > \"$1\"; exec sleep 100",
		 keep);

	spawn_ok(&p, (char *[]){"sh", "-c", script, "sh", path, NULL}, NULL);
	wait_lines(path, 1);
	close(keep);
	assert_int_equal(read_pid_line(path, 0), p.pid);
	assert_true(p.guard > 0);
	int64_t until = dbcron__mono_ms() + HANG_GUARD_MS;
	while (getpgid(p.guard) != p.pid) { /* it joins once the leader runs */
		if (dbcron__mono_ms() > until)
			fail_msg("guard %d never joined group %d", (int)p.guard, (int)p.pid);
		sleep_ms(5);
	}
	assert_true(count_fds_of(p.guard) <= 5); /* stdio, signalfd, pidfd */
	pid_t guard = p.guard;
	proc_stop(&p, 1000);
	assert_true(proc_wait_until(&p, dbcron__mono_ms() + HANG_GUARD_MS));
	assert_int_equal(proc_reap(&p, &status), 0);
	assert_int_equal(proc_exit_code(status), 128 + SIGTERM);
	assert_int_equal(kill(guard, 0), -1); /* reaped, not a zombie of ours */
	assert_int_equal(errno, ESRCH);
	unlink(path);
}

int main(void)
{
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_normal_exit),
		cmocka_unit_test(test_exec_failure),
		cmocka_unit_test(test_stop_escalates_to_kill),
		cmocka_unit_test(test_straggler_killed_with_leader),
		cmocka_unit_test(test_deadline_and_cancel),
		cmocka_unit_test(test_signal_and_kill_after),
		cmocka_unit_test(test_signal_dispositions),
		cmocka_unit_test(test_status_lost),
		cmocka_unit_test(test_spawner_killed),
		cmocka_unit_test(test_spawning_thread_exits),
		cmocka_unit_test(test_guard_shape),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
