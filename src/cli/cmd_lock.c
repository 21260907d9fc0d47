/*
 * `dbcron lock NAME -- COMMAND`: run a command under a cluster-wide lease
 * lock, and `dbcron locks`.  Every attempt, including one that found the
 * lock held, is a row in the run log (job "lock:NAME"), because "skipped"
 * is a normal outcome that must be visible.
 *
 * The command runs through the process module (exec/proc.h) in a process
 * group of its own, so that whatever it starts can be stopped with it.
 * The lease is kept by the library's renew rule (lease/keeper.c, which
 * dbcron_lock_run shares): renewed every ttl/3 while it runs.  When renewal
 * is refused (someone else holds the lock now) or has not succeeded for a
 * whole ttl by our monotonic clock, the group gets SIGTERM and,
 * --kill-grace later, SIGKILL; the run is recorded FAILED "lease lost" and
 * we exit 76.
 *
 * Invariants: the command never outlives a lost lease, nor this process
 * (kill -9 included: its guard, see exec/proc.c, stops the group), by
 * more than the grace, short of a member leaving the group with setsid;
 * the child is always reaped before we record the run.  Signals we receive are only
 * noted by the handler and forwarded by the loop, which wakes at least
 * every PROC_TICK_MS: the handler must not touch a proc it cannot lock.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "app/app.h"
#include "cli/cli.h"
#include "core/alloc.h"
#include "core/timeutil.h"
#include "dbcron/lock.h"
#include "exec/proc.h"
#include "lease/lease.h"

extern char **environ;

#define DEFAULT_KILL_GRACE_MS 5000

/* The signals we pass on to the command's group, and which came in. */
static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP};
#define N_FORWARDED (sizeof(forwarded) / sizeof(forwarded[0]))
static volatile sig_atomic_t got_signal[N_FORWARDED];

static void note_signal(int sig)
{
	for (size_t i = 0; i < N_FORWARDED; i++)
		if (forwarded[i] == sig)
			got_signal[i] = 1;
}

/* SIGINT and SIGHUP are passed on as they are (an interactive command
 * may take SIGINT to mean "cancel the current step"); SIGTERM means stop,
 * so it gets the same ending as a lost lease: SIGKILL after the grace. */
static void forward_signals(proc *child, int64_t grace_ms)
{
	for (size_t i = 0; i < N_FORWARDED; i++) {
		if (!got_signal[i])
			continue;
		got_signal[i] = 0;
		proc_signal(child, forwarded[i]);
		if (forwarded[i] == SIGTERM)
			proc_kill_after(child, grace_ms);
	}
}

static int64_t min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

static void lock_help(FILE *f)
{
	fprintf(f,
		"usage: dbcron lock NAME [--db URL | --db-file PATH] [--ttl DUR] [--owner ID]\n"
		"                        [--wait DUR] [--kill-grace DUR] [--held-exit N]\n"
		"                        -- COMMAND [ARGS...]\n\n"
		"Run COMMAND only if this caller holds the lease lock NAME, cluster-wide.\n\n"
		"  --ttl DUR         lease length, renewed every ttl/3 while COMMAND runs (default 60s)\n"
		"  --owner ID        who holds it (default HOST-PID)\n"
		"  --wait DUR        wait up to DUR for the lock instead of giving up at once\n"
		"  --kill-grace DUR  after the SIGTERM that stops COMMAND, SIGKILL follows DUR later\n"
		"                    if it is still running (default 5s)\n"
		"  --held-exit N     exit N (0-255) instead of 75 when another owner holds the lock\n"
		"                    (0 for a crontab line that other hosts may run instead)\n"
		CLI_DB_HELP "\n"
		"COMMAND runs in a process group of its own; stopping it stops everything it started\n"
		"in that group. SIGINT, SIGTERM and SIGHUP sent to dbcron lock are passed on to the\n"
		"group (SIGTERM is followed by SIGKILL after the grace). If dbcron lock dies, even of\n"
		"SIGKILL, the group gets SIGTERM at once and SIGKILL after the grace.\n\n"
		"COMMAND sees DBCRON_LOCK (name), DBCRON_LOCK_FENCE (fencing token, grows with every\n"
		"acquisition) and DBCRON_LOCK_OWNER in its environment.\n\n"
		"exit status: COMMAND's own status (128+N when killed by signal N); 75 when another\n"
		"owner holds the lock (its owner and expiry are printed); 76 when the lease was lost\n"
		"while COMMAND ran (its group was sent SIGTERM, then SIGKILL after the grace);\n"
		"127 COMMAND could not be started; 2 bad input; 1 database trouble.  COMMAND's own\n"
		"status can be any of these too: to tell a held lock apart, give --held-exit N with\n"
		"an N that COMMAND never returns, or read the run log (job 'lock:NAME', skipped).\n"
		"Every attempt is recorded in the run log as job 'lock:NAME' (succeeded, failed, skipped).\n");
}

static void record(dbcron_db *db, const char *name, const char *owner,
		   int64_t started, int64_t finished, dbcron_run_state st,
		   bool has_code, int code, const char *error)
{
	store *s = lease__store(db);
	char job[300];
	snprintf(job, sizeof(job), "lock:%s", name);
	dbcron_run run = {
		.job_id = 0, .job_name = job, .fire_at = started, .attempt = 1,
		.state = st, .due_at = started, .node = (char *)owner,
		.started_ms = started, .finished_ms = finished,
		.has_exit_code = has_code, .exit_code = code,
		.error = (char *)error,
	};
	dbcron_err err = {0};
	if (app_log_run(s, &run, &err))
		fprintf(stderr, "dbcron lock: could not record the attempt: %s\n", err.msg);
}

static int64_t db_now(dbcron_db *db)
{
	store *s = lease__store(db);
	int64_t now;
	if (app_now_ms(s, &now, NULL))
		return dbcron__wall_ms();
	return now;
}

static char **child_env(const dbcron_lease *l)
{
	size_t n = 0;
	while (environ[n])
		n++;
	char **env = dbcron__calloc(n + 4, sizeof(char *));
	if (!env)
		return NULL;
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "DBCRON_LOCK", 11) != 0)
			env[k++] = environ[i];
	char buf[600];
	snprintf(buf, sizeof(buf), "DBCRON_LOCK=%s", l->name);
	env[k++] = dbcron__strdup(buf);
	snprintf(buf, sizeof(buf), "DBCRON_LOCK_FENCE=%" PRId64, l->fence);
	env[k++] = dbcron__strdup(buf);
	snprintf(buf, sizeof(buf), "DBCRON_LOCK_OWNER=%s", l->owner);
	env[k++] = dbcron__strdup(buf);
	env[k] = NULL;
	if (!env[k - 1] || !env[k - 2] || !env[k - 3]) {
		for (size_t i = k - 3; i < k; i++)
			dbcron__free(env[i]);
		dbcron__free(env);
		return NULL;
	}
	return env;
}

static void free_env(char **env)
{
	if (!env)
		return;
	size_t n = 0;
	while (env[n])
		n++;
	for (size_t i = n - 3; i < n; i++)
		dbcron__free(env[i]);
	dbcron__free(env);
}

static void sleep_ms(int64_t ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
	nanosleep(&ts, NULL);
}

/* What lock was asked: its options, NAME and the command after "--". */
typedef struct lock_args {
	cli_common cm;
	const char *owner, *name;
	char **cmd;
	int held_exit;
	int64_t ttl, wait, grace;
	char defowner[300];
} lock_args;

/* Returns -1 to go on, else the exit status. */
static int lock_parse(int argc, char **argv, lock_args *a)
{
	static const struct option own[] = {
		{"ttl", required_argument, NULL, 't'},
		{"owner", required_argument, NULL, 'o'},
		{"wait", required_argument, NULL, 'w'},
		{"kill-grace", required_argument, NULL, 'k'},
		{"held-exit", required_argument, NULL, 'x'},
		{NULL, 0, NULL, 0},
	};
	struct option opts[CLI_MAX_LONGOPTS];
	dbcron_err err = {0};
	int c;
	/* Options and NAME come before "--", the command after it; getopt
	 * only sees the part before, so the command's own flags are safe. */
	int dashdash = -1;
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--") == 0) {
			dashdash = i;
			break;
		}
	int nopt = dashdash < 0 ? argc : dashdash;
	cli_longopts(opts, CLI_MAX_LONGOPTS, CLI_COMMON_DB | CLI_COMMON_HELP, own);
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(nopt, argv, "h", opts, NULL)) != -1) {
		if (cli_common_opt(&a->cm, c, optarg))
			continue;
		switch (c) {
		case 'o': a->owner = optarg; break;
		case 't':
			if (dbcron__parse_duration(optarg, 0, &a->ttl, &err))
				return cli_usage_error("lock", "--ttl: %s", err.msg);
			break;
		case 'w':
			if (dbcron__parse_duration(optarg, 1, &a->wait, &err))
				return cli_usage_error("lock", "--wait: %s", err.msg);
			break;
		case 'k':
			if (dbcron__parse_duration(optarg, 0, &a->grace, &err))
				return cli_usage_error("lock", "--kill-grace: %s", err.msg);
			break;
		case 'x': {
			char *end;
			long v = strtol(optarg, &end, 10);
			if (optarg[0] < '0' || optarg[0] > '9' || *end || v > 255)
				return cli_usage_error("lock", "--held-exit '%s': expected an exit "
							       "status from 0 to 255", optarg);
			a->held_exit = (int)v;
			break;
		}
		case 'h': lock_help(stdout); return 0;
		default:
			return cli_usage_error("lock", "unknown or incomplete option '%s'", argv[optind - 1]);
		}
	}
	if (optind >= nopt)
		return cli_usage_error("lock", "no lock name");
	if (optind + 1 < nopt)
		return cli_usage_error("lock", "expected one lock name, got '%s' and '%s'",
				       argv[optind], argv[optind + 1]);
	a->name = argv[optind];
	if (lease__check_name(a->name, &err))
		return cli_usage_error("lock", "%s", err.msg);
	if (dashdash < 0)
		return cli_usage_error("lock", "no command: give -- COMMAND [ARGS...]");
	if (dashdash + 1 >= argc || !argv[dashdash + 1][0])
		return cli_usage_error("lock", "no command after --");
	a->cmd = &argv[dashdash + 1];
	if (!a->owner) {
		char host[256] = "localhost";
		gethostname(host, sizeof(host) - 1);
		snprintf(a->defowner, sizeof(a->defowner), "%s-%d", host, (int)getpid());
		a->owner = a->defowner;
	}
	return -1;
}

/*
 * Try for the lock until it is ours or --wait is over (DBCRON_ELOCKED,
 * holder filled).  *asked is when the try that got it was sent: the lease
 * runs from the database's clock inside the acquire, which is no earlier,
 * so counted from then (by our monotonic clock) our view of it ends no
 * later than the database's, however slow the reply, the clock read and
 * the spawn after it.
 */
static int acquire_waiting(dbcron_db *db, const lock_args *a, dbcron_lease *lease,
			   dbcron_lease *holder, int64_t *asked, dbcron_err *err)
{
	int64_t give_up = dbcron__mono_ms() + a->wait;
	int rc;
	for (;;) {
		*asked = dbcron__mono_ms();
		rc = dbcron_lock_acquire(db, a->name, a->owner, a->ttl, lease, holder, err);
		if (rc != DBCRON_ELOCKED || dbcron__mono_ms() >= give_up)
			return rc;
		int64_t left = give_up - dbcron__mono_ms();
		sleep_ms(left < 200 ? left : 200);
	}
}

/* The lock stayed held: said on stderr and recorded SKIPPED (a normal
 * outcome, but one the run log must show).  Returns --held-exit. */
static int report_held(dbcron_db *db, const lock_args *a, const dbcron_lease *holder,
		       int64_t started)
{
	char until[64];
	dbcron__format_rfc3339(holder->until_ms, 0, 1, until, sizeof(until));
	fprintf(stderr, "dbcron lock: '%s' is held by %s until %s (fence %" PRId64 ")\n", a->name,
		holder->owner, until, holder->fence);
	char why[600];
	snprintf(why, sizeof(why), "lock held by %s until %s", holder->owner, until);
	record(db, a->name, a->owner, started, db_now(db), DBCRON_RUN_SKIPPED, false, 0, why);
	return a->held_exit;
}

/* The handler only notes a signal; the wait loop forwards it. */
static void catch_signals(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = note_signal;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < N_FORWARDED; i++)
		sigaction(forwarded[i], &sa, NULL);
}

/*
 * Wait for the command, forwarding signals and keeping the lease; a lease
 * lost or expired stops the command's group (SIGTERM, SIGKILL after the
 * grace).  Returns whether the lease was lost.
 */
static bool wait_under_lease(proc *child, lease_keeper *keeper, const lock_args *a)
{
	bool lost = false;
	char gr[32];
	dbcron__format_duration(a->grace, gr, sizeof(gr));
	for (;;) {
		int64_t wake = min64(dbcron__mono_ms() + PROC_TICK_MS, lease_keeper_due(keeper));
		if (proc_wait_until(child, wake))
			return lost;
		forward_signals(child, a->grace);
		if (lost)
			continue;
		lease_keep_state ks = lease_keeper_tick(keeper, dbcron__mono_ms());
		if (ks == LEASE_LOST)
			fprintf(stderr, "dbcron lock: lease '%s' lost (%s); sending SIGTERM to the "
				"command's process group (SIGKILL after %s)\n", a->name, keeper->why, gr);
		else if (ks == LEASE_EXPIRED)
			fprintf(stderr, "dbcron lock: lease '%s' expired before it could be renewed; "
				"sending SIGTERM to the command's process group (SIGKILL after %s)\n",
				a->name, gr);
		if (ks != LEASE_KEPT) {
			lost = true;
			proc_stop(child, a->grace);
		}
	}
}

/* The command ended: reaped, the lock released (unless lost), the run
 * recorded.  Returns our exit status. */
static int finish_run(dbcron_db *db, const lock_args *a, proc *child, dbcron_lease *lease,
		      bool lost, int64_t t_start)
{
	dbcron_err err = {0};
	pid_t pid = child->pid;
	int wstatus = 0;
	int code;
	int werr = proc_reap(child, &wstatus);
	if (werr) {
		fprintf(stderr, "dbcron lock: '%s' (pid %d): exit status lost: %s\n", a->cmd[0],
			(int)pid, strerror(werr));
		code = 1;
	} else {
		code = proc_exit_code(wstatus);
	}
	if (!lost && dbcron_lock_release(db, lease, &err) == DBCRON_EFENCED) {
		fprintf(stderr, "dbcron lock: lease '%s' was taken over before release; nothing released\n",
			a->name);
		lost = true;
	}
	char why[200] = "";
	if (lost)
		snprintf(why, sizeof(why), "lease lost (fence %" PRId64 ")", lease->fence);
	else if (code != 0)
		snprintf(why, sizeof(why), "exited with status %d", code);
	record(db, a->name, a->owner, t_start, db_now(db),
	       code == 0 && !lost ? DBCRON_RUN_SUCCEEDED : DBCRON_RUN_FAILED, true, code,
	       why[0] ? why : NULL);
	return lost ? CLI_EXIT_LOST : code;
}

int cli_lock(int argc, char **argv)
{
	lock_args la = {.held_exit = CLI_EXIT_LOCKED, .ttl = 60000,
			.grace = DEFAULT_KILL_GRACE_MS};
	int st = lock_parse(argc, argv, &la);
	if (st >= 0)
		return st;
	dbcron_err err = {0};
	dbcron_db *db = NULL;
	int status_url;
	const char *url = cli_db_url("lock", &la.cm.db, &status_url);
	if (!url)
		return status_url;
	if (dbcron_db_open(url, &db, &err))
		return cli_fail(&err);
	int status = CLI_EXIT_FAIL;
	if (lease__bound(db, la.ttl, &err)) {
		status = cli_fail(&err);
		goto out_close;
	}

	dbcron_lease lease, holder;
	int64_t started = db_now(db), asked;
	int rc = acquire_waiting(db, &la, &lease, &holder, &asked, &err);
	if (rc == DBCRON_ELOCKED) {
		status = report_held(db, &la, &holder, started);
		goto out_close;
	}
	if (rc) {
		status = cli_fail(&err);
		goto out_close;
	}

	/* the renew rule is the library's (lease/keeper.c): we only wake for it */
	lease_keeper keeper;
	lease_keeper_init(&keeper, db, &lease, la.ttl, asked);

	char **env = child_env(&lease);
	if (!env) {
		dbcron_lock_release(db, &lease, NULL);
		fprintf(stderr, "dbcron lock: out of memory\n");
		goto out_close;
	}
	catch_signals();
	/* Our own ignored signals (nohup) stay ignored for the command, as
	 * they did when it was spawned without a process group. */
	proc_opts po = {.argv = la.cmd, .envp = env, .inherit_signals = true,
			.death_grace_ms = la.grace};
	proc child;
	int64_t t_start = db_now(db);
	/* Still ours?  A lease that ran out before the command could start
	 * (a slow reply or clock read) must not start it: another owner may
	 * hold it now.  A renewal due by now is tried first. */
	if (lease_keeper_tick(&keeper, dbcron__mono_ms()) != LEASE_KEPT) {
		free_env(env);
		const char *how = keeper.state == LEASE_LOST ? "lost" : "expired";
		fprintf(stderr, "dbcron lock: lease '%s' %s before the command started; not started\n",
			la.name, how);
		dbcron_lock_release(db, &lease, NULL);
		char why[600];
		snprintf(why, sizeof(why), "lease %s before the command started (%s)", how, keeper.why);
		record(db, la.name, la.owner, t_start, db_now(db), DBCRON_RUN_FAILED, false, 0, why);
		status = CLI_EXIT_LOST;
		goto out_close;
	}
	int serr = proc_spawn(&child, &po, &err);
	free_env(env);
	if (serr) {
		fprintf(stderr, "dbcron lock: %s\n", err.msg);
		dbcron_lock_release(db, &lease, NULL);
		record(db, la.name, la.owner, t_start, db_now(db), DBCRON_RUN_FAILED, false, 0, err.msg);
		status = 127;
		goto out_close;
	}
	bool lost = wait_under_lease(&child, &keeper, &la);
	status = finish_run(db, &la, &child, &lease, lost, t_start);
out_close:
	dbcron_db_close(db);
	return status;
}

static void json_str(const char *s)
{
	putchar('"');
	for (; s && *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			printf("\\%c", ch);
		else if (ch < 0x20)
			printf("\\u%04x", ch);
		else
			putchar(ch);
	}
	putchar('"');
}

typedef struct locks_ctx {
	int format; /* CLI_FMT_* */
	int64_t now;
	int n;
} locks_ctx;

static int print_lock(void *ctx, const store_lock_row *l)
{
	locks_ctx *c = ctx;
	char since[64], until[64];
	dbcron__format_rfc3339(l->since_ms, 0, 1, since, sizeof(since));
	dbcron__format_rfc3339(l->until_ms, 0, 1, until, sizeof(until));
	const char *state = l->until_ms >= c->now ? "held" : "free";
	if (c->format == CLI_FMT_CSV)
		printf("%s,%s,%" PRId64 ",%" PRId64 ",%" PRId64 ",%s\n", l->name, l->owner,
		       l->since_ms, l->until_ms, l->fence, state);
	else if (c->format == CLI_FMT_JSON) {
		printf("%s{\"name\":", c->n ? ",\n " : "");
		json_str(l->name);
		printf(",\"owner\":");
		json_str(l->owner);
		printf(",\"since_ms\":%" PRId64 ",\"until_ms\":%" PRId64 ",\"fence\":%" PRId64
		       ",\"state\":\"%s\"}", l->since_ms, l->until_ms, l->fence, state);
	}
	else
		printf("%-24s %-24s %-24s %-24s %6" PRId64 " %s\n", l->name, l->owner, since, until,
		       l->fence, state);
	c->n++;
	return 0;
}

int cli_locks(int argc, char **argv)
{
	struct option opts[CLI_MAX_LONGOPTS];
	cli_common cm = {0};
	locks_ctx ctx = {0};
	int c;
	cli_longopts(opts, CLI_MAX_LONGOPTS, CLI_COMMON_DB | CLI_COMMON_FORMAT | CLI_COMMON_HELP,
		     NULL);
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		if (c == CLI_OPT_FORMAT && (ctx.format = cli_format_of(optarg)) < 0)
			return cli_usage_error("locks", "--format: '%s' is not table, csv or json", optarg);
		if (cli_common_opt(&cm, c, optarg))
			continue;
		switch (c) {
		case 'h':
			printf("usage: dbcron locks [--db URL | --db-file PATH] [--format table|csv|json]\n\n"
			       "List lease locks: name, owner, since, until, fence, and whether it is held now.\n\n"
			       CLI_DB_HELP);
			return 0;
		default:
			return cli_usage_error("locks", "unknown or incomplete option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return cli_usage_error("locks", "unexpected argument '%s'", argv[optind]);
	store *s;
	int rc = cli_open_store("locks", &cm.db, &s);
	if (rc)
		return rc;
	dbcron_err err = {0};
	if (app_now_ms(s, &ctx.now, &err)) {
		store_close(s);
		return cli_fail(&err);
	}
	if (ctx.format == CLI_FMT_CSV)
		printf("name,owner,since_ms,until_ms,fence,state\n");
	else if (ctx.format == CLI_FMT_JSON)
		printf("[");
	else
		printf("%-24s %-24s %-24s %-24s %6s %s\n", "NAME", "OWNER", "SINCE", "UNTIL", "FENCE", "STATE");
	rc = app_locks_each(s, print_lock, &ctx, &err);
	if (ctx.format == CLI_FMT_JSON)
		printf("]\n");
	store_close(s);
	return rc ? cli_fail(&err) : 0;
}
