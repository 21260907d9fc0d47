/*
 * The shell executor against real processes: exit codes and signals, the
 * environment, argv without a shell, output capture limits, timeouts that
 * kill the whole process group, cancel, missing commands, fd and zombie
 * hygiene, concurrent runs.  Time limits are hang guards only.
 *
 * The test process makes itself a child subreaper so that grandchildren
 * orphaned by a killed job come back to it: it can then reap them and
 * prove they died, whatever PID 1 of the container does with zombies.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/timeutil.h"
#include "exec/exec.h"
#include "exec/runas.h"

#define HANG_GUARD_MS 30000

static void run_argv(char **argv, int64_t timeout_ms, exec_cancel *cancel,
		     size_t capture, exec_result *res)
{
	dbcron_job job;
	dbcron_job_init(&job);
	job.name = "shelltest";
	job.executor = DBCRON_EXEC_SHELL;
	job.argv = argv;
	for (job.argc = 0; argv[job.argc]; job.argc++)
		;
	job.timeout_ms = timeout_ms;
	exec_req req = {
		.job = &job,
		.run_id = 77,
		.fire_at_ms = 1234,
		.attempt = 2,
		.node_id = "node-a",
		.cancel = cancel,
		.kill_grace_ms = 300,
		.capture_bytes = capture,
	};
	exec_run(&req, res);
	assert_true(res->mono_end_ms >= res->mono_start_ms);
}

static void run_sh(const char *script, exec_result *res)
{
	char *argv[] = {"sh", "-c", (char *)script, NULL};
	run_argv(argv, 0, NULL, 0, res);
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

static void test_exit_codes(void **state)
{
	(void)state;
	exec_result r;

	run_sh("exit 0", &r);
	assert_int_equal(r.state, DBCRON_RUN_SUCCEEDED);
	assert_true(r.has_exit_code);
	assert_int_equal(r.exit_code, 0);
	assert_null(r.error);
	assert_null(r.output);
	exec_result_clear(&r);

	run_sh("exit 3", &r);
	assert_int_equal(r.state, DBCRON_RUN_FAILED);
	assert_true(r.has_exit_code);
	assert_int_equal(r.exit_code, 3);
	assert_string_equal(r.error, "exited with status 3");
	exec_result_clear(&r);

	run_sh("kill -9 $$", &r);
	assert_int_equal(r.state, DBCRON_RUN_FAILED);
	assert_int_equal(r.exit_code, 128 + 9);
	assert_string_equal(r.error, "killed by signal 9 (SIGKILL)");
	exec_result_clear(&r);

	/* SIGTERM must work on the child even if we ignore it here. */
	signal(SIGTERM, SIG_IGN);
	run_sh("kill -TERM $$; sleep 5", &r);
	signal(SIGTERM, SIG_DFL);
	assert_int_equal(r.exit_code, 128 + 15);
	assert_string_equal(r.error, "killed by signal 15 (SIGTERM)");
	exec_result_clear(&r);
}

/* Run job (its argv and what it runs as are the caller's) as run 77. */
static void run_job(dbcron_job *job, exec_result *res)
{
	exec_req req = {
		.job = job,
		.run_id = 77,
		.fire_at_ms = 1234,
		.attempt = 2,
		.node_id = "node-a",
		.kill_grace_ms = 300,
	};
	for (job->argc = 0; job->argv[job->argc]; job->argc++)
		;
	exec_run(&req, res);
}

static void sh_job(dbcron_job *job, char **argv, const char *script)
{
	dbcron_job_init(job);
	job->name = "shelltest";
	job->executor = DBCRON_EXEC_SHELL;
	argv[0] = "sh";
	argv[1] = "-c";
	argv[2] = (char *)script;
	argv[3] = NULL;
	job->argv = argv;
}

/* The environment is cron's small known set, whatever the node has: no
 * variable of the node's, none of its secrets, stale run facts replaced. */
static void test_env(void **state)
{
	(void)state;
	exec_result r;
	struct passwd *pw = getpwuid(geteuid());
	char want[2048];

	setenv("DBCRON_JOB", "stale", 1);
	setenv("DBCRON_TEST_PARENT", "inherited", 1);
	setenv("DBCRON_DB", "postgresql://u:zqjx@db/x", 1);
	setenv("PGPASSWORD", "zqjx", 1);
	run_sh("env | LC_ALL=C sort", &r);
	assert_int_equal(r.state, DBCRON_RUN_SUCCEEDED);
	assert_non_null(pw);
	snprintf(want, sizeof(want),
		 "DBCRON_ATTEMPT=2\nDBCRON_FIRE_AT=1970-01-01T00:00:01.234Z\nDBCRON_FIRE_AT_MS=1234\n"
		 "DBCRON_JOB=shelltest\n"
		 "DBCRON_NODE=node-a\nDBCRON_RUN_ID=77\nHOME=%s\nLOGNAME=%s\nPATH=%s\n"
		 "PWD=%s\nSHELL=/bin/sh\nUSER=%s\n",
		 pw->pw_dir, pw->pw_name, RUNAS_DEFAULT_PATH, pw->pw_dir, pw->pw_name);
	/* PWD is the shell's own, set from the directory it starts in */
	assert_string_equal(r.output, want);
	exec_result_clear(&r);

	/* Inherited on request, except the node's settings and secrets. */
	dbcron_job job;
	char *argv[4];
	sh_job(&job, argv, "echo \"$DBCRON_JOB $DBCRON_TEST_PARENT [$DBCRON_DB] [$PGPASSWORD]\"; "
			   "env | grep -c '^DBCRON_JOB='");
	job.inherit_env = true;
	run_job(&job, &r);
	unsetenv("DBCRON_JOB");
	unsetenv("DBCRON_TEST_PARENT");
	unsetenv("DBCRON_DB");
	unsetenv("PGPASSWORD");
	assert_int_equal(r.state, DBCRON_RUN_SUCCEEDED);
	assert_string_equal(r.output, "shelltest  [] []\n1\n");
	exec_result_clear(&r);
}

/* The job's own variables and env-file, and which wins. */
static void test_env_own(void **state)
{
	(void)state;
	exec_result r;
	dbcron_job job;
	char *argv[4], path[] = "/tmp/dbcron-envfile-XXXXXX";
	char *env[] = {"B=from-env", "PATH=/usr/bin:/bin", NULL};
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	const char *text = "# a comment\n\n  A=from file\nB=from-file\r\n";
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);

	sh_job(&job, argv, "echo \"$A|$B|$PATH\"");
	job.env = env;
	job.envc = 2;
	job.env_file = path;
	run_job(&job, &r);
	assert_int_equal(r.state, DBCRON_RUN_SUCCEEDED);
	assert_string_equal(r.output, "from file|from-env|/usr/bin:/bin\n");
	exec_result_clear(&r);

	/* A bad line fails the run and names the line, not its text. */
	fd = open(path, O_WRONLY | O_TRUNC);
	assert_true(fd >= 0);
	text = "A=1\npostgresql://u:zqjx@db/x?sslmode=require\n";
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	run_job(&job, &r);
	assert_int_equal(r.state, DBCRON_RUN_FAILED);
	assert_false(r.has_exit_code);
	assert_non_null(strstr(r.error, "line 2: expected KEY=VALUE"));
	assert_null(strstr(r.error, "zqjx"));
	exec_result_clear(&r);

	unlink(path);
	run_job(&job, &r);
	assert_int_equal(r.state, DBCRON_RUN_FAILED);
	assert_non_null(strstr(r.error, ": No such file or directory"));
	assert_non_null(strstr(r.error, "env-file '/tmp/dbcron-envfile-"));
	exec_result_clear(&r);
}

static void test_argv_verbatim(void **state)
{
	(void)state;
	exec_result r;
	char *argv[] = {"printf", "[%s]\n", "a b", "$HOME", "*", "'q'", ";", NULL};

	run_argv(argv, 0, NULL, 0, &r);
	assert_int_equal(r.state, DBCRON_RUN_SUCCEEDED);
	assert_string_equal(r.output, "[a b]\n[$HOME]\n[*]\n['q']\n[;]\n");
	exec_result_clear(&r);
}

/* The user's home by default, --cwd when given, "/" for a home that is
 * not there; a --cwd that is not there fails the run. */
static void test_cwd_and_stdin(void **state)
{
	(void)state;
	exec_result r;
	struct passwd *pw = getpwuid(geteuid());
	char want[PATH_MAX + 2], real[PATH_MAX];
	dbcron_job job;
	char *argv[4];

	assert_non_null(pw);
	assert_non_null(realpath(pw->pw_dir, real));
	snprintf(want, sizeof(want), "%s\n", real);
	char *pwd[] = {"pwd", "-P", NULL};
	run_argv(pwd, 0, NULL, 0, &r);
	assert_string_equal(r.output, want);
	exec_result_clear(&r);

	sh_job(&job, argv, "pwd -P");
	job.cwd = "/tmp";
	run_job(&job, &r);
	assert_string_equal(r.output, "/tmp\n");
	exec_result_clear(&r);

	job.cwd = "/nonexistent-dbcron-dir";
	run_job(&job, &r);
	assert_int_equal(r.state, DBCRON_RUN_FAILED);
	assert_false(r.has_exit_code);
	assert_string_equal(r.error, "cannot run 'sh' in '/nonexistent-dbcron-dir': "
				     "No such file or directory");
	exec_result_clear(&r);

	/* HOME of a home that is not there: cron would fail, we start in / */
	job.cwd = NULL;
	char *env[] = {"HOME=/nonexistent-home", NULL};
	job.env = env;
	job.envc = 1;
	run_job(&job, &r);
	assert_int_equal(r.state, DBCRON_RUN_SUCCEEDED);
	assert_string_equal(r.output, want); /* the passwd home, not $HOME */
	exec_result_clear(&r);

	/* stdin is /dev/null: cat ends at once. */
	char *cat[] = {"cat", NULL};
	run_argv(cat, HANG_GUARD_MS, NULL, 0, &r);
	assert_int_equal(r.state, DBCRON_RUN_SUCCEEDED);
	assert_null(r.output);
	exec_result_clear(&r);
}

static void test_umask_and_fds(void **state)
{
	(void)state;
	exec_result r;
	dbcron_job job;
	char *argv[4];

	sh_job(&job, argv, "umask");
	job.umask = 027;
	run_job(&job, &r);
	assert_string_equal(r.output, "0027\n");
	exec_result_clear(&r);

	/* Only 0-2 reach the job, whatever this process has open. */
	int extra = open("/dev/null", O_RDONLY);
	assert_true(extra > 2);
	sh_job(&job, argv, "ls /proc/self/fd/ | sort -n | tr '\\n' ' '");
	run_job(&job, &r);
	close(extra);
	/* ls's own directory fd is 3 */
	assert_string_equal(r.output, "0 1 2 3 ");
	exec_result_clear(&r);
}

/* As another user: the real switch, so only as root (CI runs as root). */
static void test_user(void **state)
{
	(void)state;
	exec_result r;
	dbcron_job job;
	char *argv[4];
	struct passwd *nobody = getpwnam("nobody");

	if (geteuid() != 0 || !nobody) {
		print_message("not root or no user nobody: the switch is not tested here\n");
		skip();
	}
	char dir[] = "/tmp/dbcron-user-XXXXXX", want[256];
	assert_non_null(mkdtemp(dir));
	assert_int_equal(chmod(dir, 0777), 0);
	sh_job(&job, argv, "id -u; id -g; id -G; echo $USER $LOGNAME; : > f");
	job.user = "nobody";
	job.cwd = dir;
	run_job(&job, &r);
	assert_int_equal(r.state, DBCRON_RUN_SUCCEEDED);
	snprintf(want, sizeof(want), "%u\n%u\n", (unsigned)nobody->pw_uid, (unsigned)nobody->pw_gid);
	assert_memory_equal(r.output, want, strlen(want));
	assert_non_null(strstr(r.output, "nobody nobody\n"));
	exec_result_clear(&r);
	char f[300];
	struct stat st;
	snprintf(f, sizeof(f), "%s/f", dir);
	assert_int_equal(stat(f, &st), 0);
	assert_int_equal(st.st_uid, nobody->pw_uid);
	unlink(f);

	/* A directory nobody may not enter is the run's error, as nobody. */
	assert_int_equal(chmod(dir, 0700), 0);
	run_job(&job, &r);
	assert_int_equal(r.state, DBCRON_RUN_FAILED);
	assert_non_null(strstr(r.error, "Permission denied"));
	exec_result_clear(&r);
	rmdir(dir);

	/* A node that is not root: its own user runs (nothing to switch),
	 * another is refused with the reason.  In a child that drops to
	 * nobody first; it sends both results back on a pipe. */
	int pfd[2];
	assert_int_equal(pipe(pfd), 0);
	pid_t kid = fork();
	assert_true(kid >= 0);
	if (kid == 0) {
		char out[1024];
		close(pfd[0]);
		if (setgroups(0, NULL) != 0 || setgid(nobody->pw_gid) != 0 ||
		    setuid(nobody->pw_uid) != 0)
			_exit(3);
		dbcron_job j2;
		char *av2[4];
		sh_job(&j2, av2, "id -un");
		j2.user = "nobody";
		run_job(&j2, &r);
		int n = snprintf(out, sizeof(out), "%s|%s|", dbcron_run_state_name(r.state),
				 r.output ? r.output : "");
		exec_result_clear(&r);
		j2.user = "root";
		run_job(&j2, &r);
		n += snprintf(out + n, sizeof(out) - (size_t)n, "%s|%s",
			      dbcron_run_state_name(r.state), r.error ? r.error : "");
		exec_result_clear(&r);
		_exit(write(pfd[1], out, (size_t)n) == n ? 0 : 4);
	}
	close(pfd[1]);
	char got[1024] = "";
	ssize_t gn = read(pfd[0], got, sizeof(got) - 1);
	close(pfd[0]);
	int kst;
	assert_int_equal(waitpid(kid, &kst, 0), kid);
	assert_true(WIFEXITED(kst) && WEXITSTATUS(kst) == 0);
	assert_true(gn > 0);
	got[gn] = '\0';
	char expect[512];
	snprintf(expect, sizeof(expect),
		 "succeeded|nobody\n|failed|cannot run 'sh' as user 'root' (uid 0, gid 0): "
		 "setgroups: Operation not permitted; this process runs as uid %u, and only "
		 "root (or CAP_SETUID and CAP_SETGID) can switch users",
		 (unsigned)nobody->pw_uid);
	assert_string_equal(got, expect);

	/* Unknown user and group: the run's error, naming the node. */
	job.cwd = NULL;
	job.user = "no-such-user-dbcron";
	run_job(&job, &r);
	assert_int_equal(r.state, DBCRON_RUN_FAILED);
	assert_string_equal(r.error, "user 'no-such-user-dbcron' not found on node node-a");
	exec_result_clear(&r);
	job.user = "nobody";
	job.group = "no-such-group-dbcron";
	run_job(&job, &r);
	assert_string_equal(r.error, "group 'no-such-group-dbcron' not found on node node-a");
	exec_result_clear(&r);
}

static void test_stdout_stderr(void **state)
{
	(void)state;
	exec_result r;

	run_sh("echo out; echo err >&2; echo out2", &r);
	assert_string_equal(r.output, "out\nerr\nout2\n");
	exec_result_clear(&r);
}

static void test_capture_limits(void **state)
{
	(void)state;
	exec_result r;
	char *big[] = {"sh", "-c", "head -c 1000000 /dev/zero | tr '\\0' x", NULL};

	run_argv(big, 0, NULL, 1024, &r);
	assert_int_equal(r.state, DBCRON_RUN_SUCCEEDED);
	const char *marker = "\n[... 997952 bytes omitted ...]\n";
	size_t ml = strlen(marker);
	assert_int_equal(strlen(r.output), 1024 + ml + 1024);
	for (size_t i = 0; i < 1024; i++) {
		assert_int_equal(r.output[i], 'x');
		assert_int_equal(r.output[1024 + ml + i], 'x');
	}
	assert_memory_equal(r.output + 1024, marker, ml);
	exec_result_clear(&r);

	/* Head and tail are the right ends, with a ring that wrapped. */
	run_argv((char *[]){"sh", "-c",
			    "printf HEAD; head -c 5000 /dev/zero | tr '\\0' m; printf TAIL", NULL},
		 0, NULL, 16, &r);
	assert_string_equal(r.output, "HEADmmmmmmmmmmmm\n[... 4976 bytes omitted ...]\nmmmmmmmmmmmmTAIL");
	exec_result_clear(&r);

	/* Between one and two limits nothing is dropped: no marker. */
	run_argv((char *[]){"sh", "-c", "printf 0123456789abcdefghijklmnopqrst", NULL},
		 0, NULL, 16, &r);
	assert_string_equal(r.output, "0123456789abcdefghijklmnopqrst");
	exec_result_clear(&r);

	/* 100 MB stays about 2 KiB; NUL bytes are stored as '?'. */
	run_argv((char *[]){"head", "-c", "100000000", "/dev/zero", NULL}, 0, NULL, 0, &r);
	assert_int_equal(r.state, DBCRON_RUN_SUCCEEDED);
	assert_int_equal(strlen(r.output), 2048 + strlen("\n[... 99997952 bytes omitted ...]\n"));
	assert_int_equal(r.output[0], '?');
	assert_non_null(strstr(r.output, "[... 99997952 bytes omitted ...]"));
	exec_result_clear(&r);

	/* Invalid UTF-8 becomes '?', valid multibyte text is kept. */
	run_argv((char *[]){"printf", "caf\xc3\xa9 \xff\xfe ok", NULL}, 0, NULL, 0, &r);
	assert_string_equal(r.output, "caf\xc3\xa9 ?? ok");
	exec_result_clear(&r);
}

/* Reap orphans that came back to us (we are a subreaper) until pid is gone
 * for good: kill(pid, 0) fails with ESRCH. */
static void assert_pid_gone(pid_t pid)
{
	int64_t until = dbcron__mono_ms() + HANG_GUARD_MS;
	for (;;) {
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		if (kill(pid, 0) == -1 && errno == ESRCH)
			return;
		if (dbcron__mono_ms() > until)
			fail_msg("pid %d still exists after the run", (int)pid);
		sleep_ms(5);
	}
}

static pid_t read_pid_file(const char *path)
{
	long pid = 0;
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	assert_int_equal(fscanf(f, "%ld", &pid), 1);
	fclose(f);
	assert_true(pid > 1);
	return (pid_t)pid;
}

static void timeout_case(const char *script, int64_t timeout_ms)
{
	char path[] = "/tmp/dbcron-shell-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);

	exec_result r;
	char *argv[] = {"sh", "-c", (char *)script, "sh", path, NULL};
	run_argv(argv, timeout_ms, NULL, 0, &r);
	assert_int_equal(r.state, DBCRON_RUN_TIMED_OUT);
	char want[96];
	char d[32];
	dbcron__format_duration(timeout_ms, d, sizeof(d));
	snprintf(want, sizeof(want), "timed out after %s; process group terminated", d);
	assert_string_equal(r.error, want);
	assert_true(r.mono_end_ms - r.mono_start_ms >= timeout_ms);
	assert_true(r.mono_end_ms - r.mono_start_ms < HANG_GUARD_MS);
	assert_string_equal(r.output, "started\n");
	exec_result_clear(&r);

	pid_t gpid = read_pid_file(path);
	assert_pid_gone(gpid);
	unlink(path);
}

static void test_timeout_kills_group(void **state)
{
	(void)state;
	/* Leader and grandchild both ignore SIGTERM: only the SIGKILL after
	 * the grace can end them. */
	timeout_case("trap '' TERM; sleep 100 & echo $! > \"$1\"; echo started; sleep 100", 300);
	/* The leader dies of SIGTERM, the grandchild ignores it and must not
	 * outlive the run. */
	timeout_case("(trap '' TERM; exec sleep 100) & echo $! > \"$1\"; echo started; sleep 100",
		     200);
}

static void *cancel_later(void *arg)
{
	exec_cancel *c = arg;
	sleep_ms(200);
	atomic_store(&c->requested, 1);
	return NULL;
}

static void test_cancel(void **state)
{
	(void)state;
	exec_cancel c = {0};
	pthread_t th;
	exec_result r;

	assert_int_equal(pthread_create(&th, NULL, cancel_later, &c), 0);
	char *argv[] = {"sh", "-c", "echo before; sleep 100; echo after", NULL};
	run_argv(argv, HANG_GUARD_MS * 2, &c, 0, &r);
	pthread_join(th, NULL);
	assert_int_equal(r.state, DBCRON_RUN_FAILED);
	assert_string_equal(r.error, "cancelled");
	assert_string_equal(r.output, "before\n");
	assert_true(r.mono_end_ms - r.mono_start_ms < HANG_GUARD_MS);
	exec_result_clear(&r);

	/* Already cancelled before the start: stopped at the first check. */
	atomic_store(&c.requested, 1);
	run_argv((char *[]){"sleep", "100", NULL}, 0, &c, 0, &r);
	assert_int_equal(r.state, DBCRON_RUN_FAILED);
	assert_string_equal(r.error, "cancelled");
	exec_result_clear(&r);
}

static void test_missing_command(void **state)
{
	(void)state;
	exec_result r;

	run_argv((char *[]){"nosuchcmd", NULL}, 0, NULL, 0, &r);
	assert_int_equal(r.state, DBCRON_RUN_FAILED);
	assert_false(r.has_exit_code);
	assert_string_equal(r.error, "cannot execute 'nosuchcmd': No such file or directory");
	assert_null(r.output);
	exec_result_clear(&r);

	run_argv((char *[]){"/nonexistent/dir/tool", "x", NULL}, 0, NULL, 0, &r);
	assert_string_equal(r.error,
			    "cannot execute '/nonexistent/dir/tool': No such file or directory");
	exec_result_clear(&r);

	/* A file that is not executable. */
	char path[] = "/tmp/dbcron-noexec-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	chmod(path, 0644);
	run_argv((char *[]){path, NULL}, 0, NULL, 0, &r);
	assert_int_equal(r.state, DBCRON_RUN_FAILED);
	assert_false(r.has_exit_code);
	char want[128];
	snprintf(want, sizeof(want), "cannot execute '%s': Permission denied", path);
	assert_string_equal(r.error, want);
	exec_result_clear(&r);
	unlink(path);

	/* Empty command. */
	run_argv((char *[]){NULL}, 0, NULL, 0, &r);
	assert_int_equal(r.state, DBCRON_RUN_FAILED);
	assert_non_null(strstr(r.error, "no command"));
	exec_result_clear(&r);
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

/* Zombie children of this process, from /proc. */
static int count_zombie_children(void)
{
	int n = 0;
	DIR *d = opendir("/proc");
	assert_non_null(d);
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		char path[300], buf[512];
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
		if (rp && sscanf(rp + 1, " %c %d", &st, &ppid) == 2 && ppid == getpid() &&
		    st == 'Z')
			n++;
	}
	closedir(d);
	return n;
}

/* Earlier tests' killed jobs left orphans (their grandchildren) that came
 * back to us as the subreaper: reap them so only this test's runs count. */
static void reap_orphans(void)
{
	int64_t until = dbcron__mono_ms() + HANG_GUARD_MS;
	for (;;) {
		pid_t r = waitpid(-1, NULL, WNOHANG);
		if (r < 0 && errno == ECHILD)
			return;
		if (r == 0)
			sleep_ms(5);
		if (dbcron__mono_ms() > until)
			fail_msg("an orphan is still running");
	}
}

static void test_no_leaks(void **state)
{
	(void)state;
	exec_result r;

	reap_orphans();
	int before = count_fds();

	for (int i = 0; i < 100; i++) {
		switch (i % 4) {
		case 0:
			run_sh("echo hi", &r);
			break;
		case 1:
			run_argv((char *[]){"nosuchcmd", NULL}, 0, NULL, 0, &r);
			break;
		case 2:
			run_sh("exit 1", &r);
			break;
		default:
			run_argv((char *[]){"sleep", "10", NULL}, 20, NULL, 0, &r);
			assert_int_equal(r.state, DBCRON_RUN_TIMED_OUT);
			break;
		}
		exec_result_clear(&r);
	}
	assert_int_equal(count_fds(), before);
	assert_int_equal(count_zombie_children(), 0);
	/* Nothing of ours is left to reap. */
	errno = 0;
	assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
	assert_int_equal(errno, ECHILD);
}

/* Each allocation failing in turn: a clean FAILED (or a run that did not
 * need that allocation), never a crash, leak or stray fd (ASan build). */
static void test_out_of_memory(void **state)
{
	(void)state;
	int before = count_fds();
	/* enough to reach every allocation before the spawn (the user's
	 * look-up, the environment) and the ones after it */
	for (long n = 1; n <= 60; n++) {
		exec_result r;
		dbcron__alloc_fail_at(n);
		run_sh("echo hi", &r);
		dbcron__alloc_fail_at(0);
		assert_true(r.state == DBCRON_RUN_SUCCEEDED || r.state == DBCRON_RUN_FAILED);
		exec_result_clear(&r);
	}
	reap_orphans();
	assert_int_equal(count_fds(), before);
}

/* Several workers at once, each must see its own run. */
#define CONC_THREADS 4
#define CONC_RUNS 15

static void *conc_worker(void *arg)
{
	intptr_t t = (intptr_t)arg;
	for (int i = 0; i < CONC_RUNS; i++) {
		dbcron_job job;
		dbcron_job_init(&job);
		job.name = "conc";
		char *argv[] = {"sh", "-c", "echo $DBCRON_RUN_ID; echo err >&2", NULL};
		job.argv = argv;
		job.argc = 3;
		exec_req req = {.job = &job, .run_id = t * 1000 + i, .attempt = 1};
		exec_result r;
		exec_shell(&req, &r);
		char want[64];
		snprintf(want, sizeof(want), "%ld\nerr\n", (long)(t * 1000 + i));
		bool ok = r.state == DBCRON_RUN_SUCCEEDED && r.output && !strcmp(r.output, want);
		exec_result_clear(&r);
		if (!ok)
			return (void *)1;
	}
	return NULL;
}

static void test_concurrent(void **state)
{
	(void)state;
	pthread_t th[CONC_THREADS];
	int before = count_fds();

	for (intptr_t i = 0; i < CONC_THREADS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, conc_worker, (void *)i), 0);
	for (int i = 0; i < CONC_THREADS; i++) {
		void *ret;
		pthread_join(th[i], &ret);
		assert_null(ret);
	}
	assert_int_equal(count_fds(), before);
}

int main(void)
{
	/* Orphaned grandchildren come back to us (see the header). */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exit_codes),
		cmocka_unit_test(test_env),
		cmocka_unit_test(test_env_own),
		cmocka_unit_test(test_argv_verbatim),
		cmocka_unit_test(test_cwd_and_stdin),
		cmocka_unit_test(test_umask_and_fds),
		cmocka_unit_test(test_user),
		cmocka_unit_test(test_stdout_stderr),
		cmocka_unit_test(test_capture_limits),
		cmocka_unit_test(test_timeout_kills_group),
		cmocka_unit_test(test_cancel),
		cmocka_unit_test(test_missing_command),
		cmocka_unit_test(test_no_leaks),
		cmocka_unit_test(test_out_of_memory),
		cmocka_unit_test(test_concurrent),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
