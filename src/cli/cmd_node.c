/*
 * `dbcron node`: run one scheduler node in the foreground until SIGINT or
 * SIGTERM, then stop gracefully (hand back unstarted fires, wait for
 * running jobs up to --grace, resolve the rest by policy); a second signal
 * stops the running jobs at once.  Under systemd (Type=notify) it says
 * READY=1 once the node is registered and WATCHDOG=1 at every renewed
 * lease, so a node that cannot renew its lease for WatchdogSec is
 * restarted, with STATUS= (claimed, running, the last database error);
 * on a stop signal STOPPING=1 and EXTEND_TIMEOUT_USEC= for what the
 * graceful stop may take; outside systemd sd_notify does nothing.  With --http it also
 * serves the HTTP API, which owns its own threads and store handles
 * (src/http/) and is stopped before the node is freed.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <systemd/sd-daemon.h>

#include "cli/cli.h"
#include "cli/conf.h"
#include "core/dynlib.h"
#include "core/log.h"
#include "core/timeutil.h"
#include "dbcron/node.h"
#include "http/http.h"
#include "sched/stats.h"

/* Shared by the signal handlers, the signal thread and the main thread:
 * lock-free atomics, which a handler may touch, so the thread's reads are
 * ordered after main's writes (TSan saw plain ones race). */
static _Atomic(dbcron_node *) running_node;
static atomic_int signals_seen;
/* Posted by the first stop signal, for the thread that tells systemd
 * (sd_notify is not async-signal-safe). */
static sem_t stop_sem;
static bool stop_sem_ok;

static atomic_int hup_pending;

/* SIGHUP: the signal thread reads the API token file again. */
static void on_hup(int sig)
{
	(void)sig;
	atomic_store(&hup_pending, 1);
	if (stop_sem_ok)
		sem_post(&stop_sem);
}

static void on_signal(int sig)
{
	(void)sig;
	dbcron_node *n = atomic_load(&running_node);
	if (!n)
		return;
	if (atomic_fetch_add(&signals_seen, 1)) {
		dbcron_node_stop_now(n);
	} else {
		dbcron_node_stop(n);
		if (stop_sem_ok)
			sem_post(&stop_sem);
	}
}

/* libsystemd, loaded only under systemd (NOTIFY_SOCKET set): elsewhere
 * sd_notify would do nothing, and loading it costs every start. */
#define NODE_SD_FUNCS(X) X(sd_notify)
typedef struct node_sd {
	NODE_SD_FUNCS(DBCRON_DYNLIB_MEMBER)
} node_sd;
static node_sd sd;
#define NODE_SD_SYM(f) DBCRON_DYNLIB_SYM(node_sd, f)
static const dbcron_dynsym sd_syms[] = {NODE_SD_FUNCS(NODE_SD_SYM)};
static dbcron_dynlib sd_lib = {.soname = "libsystemd.so.0", .package = "libsystemd0",
			       .what = "Running under systemd (NOTIFY_SOCKET)", .syms = sd_syms,
			       .nsyms = sizeof(sd_syms) / sizeof(sd_syms[0]), .api = &sd};

/* What `dbcron node` tells systemd besides the config it runs with, and
 * what its signal thread acts on. */
typedef struct node_notify {
	bool notify; /* under systemd (NOTIFY_SOCKET) */
	bool ready;
	node_stats *stats;
	http_server *hs;        /* reloaded on SIGHUP; NULL without --http */
	int64_t stop_within_ms; /* the most a graceful stop may take */
	pthread_t stopper;
	bool stopper_started;
} node_notify;

/* The node's alive callback, on its database thread: READY=1 the first
 * time, WATCHDOG=1 each time, and STATUS= for `systemctl status`: what
 * this node claimed and runs, and its last database error while recent. */
static void notify_alive(void *ctx)
{
	node_notify *nn = ctx;
	char status[400], last[200];
	int64_t ago = 0;
	unsigned long long claimed =
		atomic_load_explicit(&nn->stats->claimed, memory_order_relaxed);
	long long running = atomic_load_explicit(&nn->stats->busy[0], memory_order_relaxed) +
			    atomic_load_explicit(&nn->stats->busy[1], memory_order_relaxed);
	long long inflight = atomic_load_explicit(&nn->stats->inflight, memory_order_relaxed);
	int k = snprintf(status, sizeof(status),
			 "%sWATCHDOG=1\nSTATUS=claimed %llu, running %lld, in flight %lld",
			 nn->ready ? "" : "READY=1\n", claimed, running, inflight);
	if (node_stats_last_error(nn->stats, last, sizeof(last), &ago) && ago < 10 * 60000 &&
	    k > 0 && (size_t)k < sizeof(status))
		snprintf(status + k, sizeof(status) - (size_t)k, "; last database error %llds ago: %s",
			 (long long)(ago / 1000), last);
	/* one line: a newline in the message would start another assignment */
	for (char *p = strchr(status, '\0') - 1; p > status && strncmp(p, "STATUS=", 7); p--)
		if (*p == '\n')
			*p = ' ';
	sd.sd_notify(0, status);
	nn->ready = true;
}

/* The signal thread (the handlers only post): SIGHUP reads the API token
 * file again; once a stop signal came, under systemd, STOPPING=1 and the
 * stop timeout extended to what this stop may take (--grace for the
 * running jobs, the kill grace, --grace again for the last writes), so a
 * --grace above the unit's TimeoutStopSec is not cut short by SIGKILL. */
static void *stopper_main(void *ctx)
{
	node_notify *nn = ctx;
	for (;;) {
		while (sem_wait(&stop_sem) && errno == EINTR)
			;
		if (!atomic_load(&running_node) || atomic_load(&signals_seen))
			break;
		if (atomic_exchange(&hup_pending, 0)) {
			dbcron_err err = {0};
			if (http_server_reload(nn->hs, &err))
				dbcron__log(LOG_ERROR, "http.reload", LOG_STR("msg", err.msg),
					    LOG_STR("kept", "the tokens in use are kept"));
		}
	}
	if (!atomic_load(&running_node) || !nn->notify)
		return NULL; /* woken by the run's end */
	char msg[200];
	snprintf(msg, sizeof(msg),
		 "STOPPING=1\nSTATUS=stopping: handing back unstarted fires, waiting for "
		 "running jobs\nEXTEND_TIMEOUT_USEC=%lld",
		 (long long)nn->stop_within_ms * 1000);
	sd.sd_notify(0, msg);
	return NULL;
}

/* The thread that says STOPPING=1; without it (no thread) a stop is only
 * not announced. */
static void stopper_start(node_notify *nn, const dbcron_node_config *cfg)
{
	dbcron_node_config eff;
	dbcron_node_config_init(&eff);
	int64_t grace = cfg->grace_ms > 0 ? cfg->grace_ms : eff.grace_ms;
	int64_t kill = cfg->kill_grace_ms > 0 ? cfg->kill_grace_ms : eff.kill_grace_ms;
	nn->stop_within_ms = 2 * grace + kill + 10000;
	stop_sem_ok = sem_init(&stop_sem, 0, 0) == 0;
	nn->stopper_started =
		stop_sem_ok && pthread_create(&nn->stopper, NULL, stopper_main, nn) == 0;
}

static void help(FILE *f)
{
	fprintf(f,
		"usage: dbcron node [--db URL | --db-file PATH] [--node-id ID] [--workers N]\n"
		"                   [--slow-workers N]\n"
		"                   [--claim-batch N] [--max-inflight N] [--preread DUR]\n"
		"                   [--claim-strategy per-row|lock-row]\n"
		"                   [--lease DUR] [--heartbeat DUR] [--grace DUR] [--retention DUR|forever]\n"
		"                   [--log-runs] [--quiet] [--notify-secret-file PATH]\n"
		"                   [--http ADDR:PORT [--api-token-file PATH]\n"
		"                   [--http-host NAME]... [--http-cert PATH --http-key PATH]\n"
		"                   [--metrics-max-jobs N]]\n\n"
		"Run a scheduler node until SIGINT or SIGTERM (a second one stops running jobs at\n"
		"once instead of after --grace).  Under systemd (Type=notify) it sends READY=1 once\n"
		"registered, WATCHDOG=1 and STATUS= (claimed, running, the last database error) at\n"
		"every renewed lease, and on a stop signal STOPPING=1 with EXTEND_TIMEOUT_USEC= for\n"
		"what the stop may take (2 x --grace + 12 s).  SIGHUP reads the --api-token-file\n"
		"again (the other settings take a restart).\n\n"
		"  --node-id ID       stable name of this node (default HOST-PID)\n"
		"  --workers N        threads of the fast pool (default 8)\n"
		"  --slow-workers N   threads of the slow pool for jobs that often run > 500 ms (default 2)\n"
		"  --claim-batch N    most fires taken by one claim (default 200)\n"
		"  --max-inflight N   most fires claimed but not finished (default 5000)\n"
		"  --preread DUR      claim fires due within this window (default 1500ms: claims then\n"
		"                     land mid-second, away from the boundaries where cron fires cluster)\n"
		"  --claim-strategy S per-row (default): claims run side by side, each locking only\n"
		"                     the rows it takes; lock-row: XXL-JOB's schedule lock, one claim\n"
		"                     at a time holds the row dbcron:schedule (--preread default 5s)\n"
		"  --lease DUR        node lease; others take over after it lapses (default 3s)\n"
		"  --heartbeat DUR    lease renewal period (default 1s)\n"
		"  --grace DUR        on stop, wait this long for running jobs (default 10s)\n"
		"  --retention DUR    prune finished runs older than DUR (default 30d), one node at a\n"
		"                     time under the lease lock dbcron:maintenance; 'forever' keeps all\n"
		"  --log-runs         also log every run start and end and overlap skips (default:\n"
		"                     failures, timeouts, fires this node starts too late\n"
		"                     (misfired), takeovers and lease events; the misfires a\n"
		"                     claim records are in the run log only)\n"
		"  --quiet            log warnings and errors only\n"
		"  --notify-secret-file PATH  sign each webhook reaction: X-Dbcron-Signature:\n"
		"                     sha256=HMAC-SHA256 of the body under the file's first line\n"
		"                     (docs/reactions.md); never handed to a job\n"
		"  --http ADDR:PORT   also serve the HTTP API (docs/http.md) there, on threads and\n"
		"                     database connections of its own; a loopback address unless\n"
		"                     --api-token-file is given\n"
		"  --api-token-file PATH  lines 'TOKEN ROLE' (ROLE read or admin; TOKEN may be\n"
		"                     sha256:HEX); without it the API is read-only\n"
		"  --http-host NAME   a name the server answers to besides its addresses and\n"
		"                     localhost (a request whose Host is another name is 403:\n"
		"                     DNS rebinding); repeat it or give NAME,NAME\n"
		"  --http-cert PATH, --http-key PATH  serve HTTPS: the PEM certificate (chain) and\n"
		"                     its private key\n"
		"  --metrics-max-jobs N  per-job series in /metrics for at most N jobs (default 1000)\n"
		CLI_DB_HELP
		"Jobs get a clean environment (HOME, USER, LOGNAME, SHELL, PATH, DBCRON_* run facts\n"
		"and their own --env), and never the node's DBCRON_DB, DBCRON_DB_FILE, PGPASSWORD,\n"
		"PGPASSFILE, PGSERVICEFILE or MYSQL_PWD, also with --inherit-env.  A job that runs as the node's\n"
		"user can still read whatever that user can (the URL file, ~/.pgpass, the node's\n"
		"/proc): give jobs a --user of their own (docs/security.md).  Prefer --db-file or\n"
		"DBCRON_DB_FILE (a file only the node's user can read) or libpq's password file\n"
		"(PGPASSFILE, default ~/.pgpass) to a password in argv.  A --db value is blanked in\n"
		"the node's argv once read (others may see it in the moment before).\n");
}

static int parse_int(const char *cmd, const conf_value *v, int min, int *out)
{
	char *end;
	errno = 0;
	long x = strtol(v->text, &end, 10);
	if (!*v->text || *end || errno || x < min || x > INT_MAX)
		return cli_usage_error(cmd, "%s: '%s' is not an integer >= %d", v->label, v->text, min);
	*out = (int)x;
	return 0;
}

static int parse_dur(const char *cmd, const conf_value *v, int64_t *out)
{
	dbcron_err err = {0};
	if (dbcron__parse_duration(v->text, 0, out, &err))
		return cli_usage_error(cmd, "%s: %s", v->label, err.msg);
	return 0;
}

/* One key's value into its field; 0 when unset (the default stays). */
static int node_key(const char *cmd, conf_key k, dbcron_node_config *cfg, http_config *hc)
{
	conf_value v;
	int rc = conf_get(cmd, k, &v);
	bool on = false;
	if (rc || !v.text)
		return rc;
	switch (k) {
	case CONF_NODE_ID: cfg->node_id = v.text; return 0;
	case CONF_WORKERS: return parse_int(cmd, &v, 1, &cfg->workers);
	case CONF_SLOW_WORKERS: return parse_int(cmd, &v, 1, &cfg->slow_workers);
	case CONF_CLAIM_BATCH: return parse_int(cmd, &v, 1, &cfg->claim_batch);
	case CONF_MAX_INFLIGHT: return parse_int(cmd, &v, 1, &cfg->max_inflight);
	case CONF_PREREAD: return parse_dur(cmd, &v, &cfg->preread_ms);
	case CONF_CLAIM_STRATEGY:
		if (strcmp(v.text, "per-row") == 0)
			cfg->claim_strategy = DBCRON_CLAIM_PER_ROW;
		else if (strcmp(v.text, "lock-row") == 0)
			cfg->claim_strategy = DBCRON_CLAIM_LOCK_ROW;
		else
			return cli_usage_error(cmd, "%s: '%s' is not per-row or lock-row", v.label, v.text);
		return 0;
	case CONF_LEASE: return parse_dur(cmd, &v, &cfg->lease_ms);
	case CONF_HEARTBEAT: return parse_dur(cmd, &v, &cfg->heartbeat_ms);
	case CONF_GRACE: return parse_dur(cmd, &v, &cfg->grace_ms);
	case CONF_RETENTION:
		if (strcmp(v.text, "forever") == 0) {
			cfg->retention_ms = -1;
			return 0;
		}
		return parse_dur(cmd, &v, &cfg->retention_ms);
	case CONF_LOG_RUNS: return conf_bool(cmd, &v, &cfg->log_runs);
	case CONF_QUIET:
		if (!(rc = conf_bool(cmd, &v, &on)) && on)
			dbcron__log_set_level(LOG_WARN);
		return rc;
	case CONF_NOTIFY_SECRET_FILE:
		if (cfg)
			cfg->notify_secret_file = v.text;
		return 0;
	case CONF_HTTP: hc->listen = v.text; return 0;
	case CONF_API_TOKEN_FILE: hc->token_file = v.text; return 0;
	case CONF_HTTP_HOST: {
		dbcron_err e = {0};
		if (http_hosts_check(v.text, &e))
			return cli_usage_error(cmd, "%s: %s", v.label, e.msg);
		hc->hosts = v.text;
		return 0;
	}
	case CONF_HTTP_CERT: hc->cert_file = v.text; return 0;
	case CONF_HTTP_KEY: hc->key_file = v.text; return 0;
	case CONF_METRICS_MAX_JOBS: {
		int n = 0;
		if (!(rc = parse_int(cmd, &v, 0, &n)))
			hc->metrics_max_jobs = (size_t)n;
		return rc;
	}
	default: return 0; /* db and db-file: cli_db_url */
	}
}

/* What both node and serve check of the HTTP settings. */
static int http_settings_check(const char *cmd, const http_config *hc)
{
	if (!hc->cert_file != !hc->key_file)
		return cli_usage_error(cmd, "--http-cert and --http-key go together");
	if (hc->cert_file && !hc->listen)
		return cli_usage_error(cmd, "--http-cert needs --http");
	return 0;
}

int cli_http_settings(const char *cmd, http_config *hc)
{
	int rc = 0;
	for (conf_key k = CONF_HTTP; k <= CONF_METRICS_MAX_JOBS && !rc; k++)
		rc = node_key(cmd, k, NULL, hc);
	return rc ? rc : http_settings_check(cmd, hc);
}

int cli_node_settings(const char *cmd, dbcron_node_config *cfg, http_config *hc)
{
	int rc = 0;
	conf_value preread;
	for (conf_key k = CONF_NODE_ID; k <= CONF_METRICS_MAX_JOBS && !rc; k++)
		rc = node_key(cmd, k, cfg, hc);
	if (rc || (rc = conf_get(cmd, CONF_PREREAD, &preread)))
		return rc;
	if (cfg->claim_strategy == DBCRON_CLAIM_LOCK_ROW && !preread.text)
		cfg->preread_ms = 0; /* the node's lock-row default */
	if (cfg->heartbeat_ms * 2 > cfg->lease_ms)
		return cli_usage_error(cmd, "--lease must be at least twice --heartbeat");
	if (hc->token_file && !hc->listen)
		return cli_usage_error(cmd, "--api-token-file needs --http");
	if (hc->hosts && !hc->listen)
		return cli_usage_error(cmd, "--http-host needs --http");
	return http_settings_check(cmd, hc);
}

int cli_node(int argc, char **argv)
{
	static const struct option own[] = {
		{"node-id", required_argument, NULL, CONF_OPT(CONF_NODE_ID)},
		{"workers", required_argument, NULL, CONF_OPT(CONF_WORKERS)},
		{"slow-workers", required_argument, NULL, CONF_OPT(CONF_SLOW_WORKERS)},
		{"claim-batch", required_argument, NULL, CONF_OPT(CONF_CLAIM_BATCH)},
		{"max-inflight", required_argument, NULL, CONF_OPT(CONF_MAX_INFLIGHT)},
		{"preread", required_argument, NULL, CONF_OPT(CONF_PREREAD)},
		{"claim-strategy", required_argument, NULL, CONF_OPT(CONF_CLAIM_STRATEGY)},
		{"lease", required_argument, NULL, CONF_OPT(CONF_LEASE)},
		{"heartbeat", required_argument, NULL, CONF_OPT(CONF_HEARTBEAT)},
		{"grace", required_argument, NULL, CONF_OPT(CONF_GRACE)},
		{"log-runs", no_argument, NULL, CONF_OPT(CONF_LOG_RUNS)},
		{"retention", required_argument, NULL, CONF_OPT(CONF_RETENTION)},
		{"quiet", no_argument, NULL, CONF_OPT(CONF_QUIET)},
		{"notify-secret-file", required_argument, NULL, CONF_OPT(CONF_NOTIFY_SECRET_FILE)},
		{"http", required_argument, NULL, CONF_OPT(CONF_HTTP)},
		{"api-token-file", required_argument, NULL, CONF_OPT(CONF_API_TOKEN_FILE)},
		{"http-host", required_argument, NULL, CONF_OPT(CONF_HTTP_HOST)},
		{"http-cert", required_argument, NULL, CONF_OPT(CONF_HTTP_CERT)},
		{"http-key", required_argument, NULL, CONF_OPT(CONF_HTTP_KEY)},
		{"metrics-max-jobs", required_argument, NULL, CONF_OPT(CONF_METRICS_MAX_JOBS)},
		{NULL, 0, NULL, 0},
	};
	struct option opts[CLI_MAX_LONGOPTS];
	dbcron_node_config cfg;
	dbcron_node_config_init(&cfg);
	cli_common cm = {0};
	http_config hc;
	http_config_init(&hc);
	int c, rc;
	cli_longopts(opts, CLI_MAX_LONGOPTS, CLI_COMMON_DB | CLI_COMMON_HELP, own);
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		int k = CONF_OPT_KEY(c);
		if (cli_common_opt(&cm, c, optarg))
			continue;
		if (k >= 0)
			conf_set_flag((conf_key)k, optarg ? optarg : "true");
		else if (c == 'h') {
			help(stdout);
			return 0;
		} else {
			return cli_usage_error("node", "unknown or incomplete option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return cli_usage_error("node", "unexpected argument '%s'", argv[optind]);
	if ((rc = cli_node_settings("node", &cfg, &hc)))
		return rc;
	cfg.db_url = cli_db_url("node", &cm.db, &rc);
	if (!cfg.db_url)
		return rc;

	node_notify nn = {0};
	dbcron_err err = {0};
	bool notify = getenv("NOTIFY_SOCKET") != NULL;
	if (notify) {
		if (dbcron__dynlib_load(&sd_lib, &err))
			return cli_fail(&err);
		cfg.alive = notify_alive;
		cfg.alive_ctx = &nn;
	}
	dbcron_node *n = NULL;
	http_server *hs = NULL;
	if (dbcron_node_create(&cfg, &n, &err))
		return cli_fail(&err);
	hc.db_url = cfg.db_url;
	hc.stats = dbcron__node_stats(n);
	nn.stats = hc.stats;
	if (hc.listen && http_server_start(&hc, &hs, &err)) {
		dbcron_node_free(n);
		return cli_fail(&err);
	}
	nn.notify = notify;
	nn.hs = hs;
	/* before the thread starts: it ends at once if it sees no node */
	atomic_store(&running_node, n);
	stopper_start(&nn, &cfg);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = on_hup;
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	rc = dbcron_node_run(n, &err);
	atomic_store(&running_node, NULL);
	if (nn.stopper_started) {
		sem_post(&stop_sem); /* a stop it has not seen: it returns at once */
		pthread_join(nn.stopper, NULL);
	}
	http_server_stop(hs);
	dbcron_node_free(n);
	return rc ? cli_fail(&err) : 0;
}
