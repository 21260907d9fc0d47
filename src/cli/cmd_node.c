/*
 * `dbcron node`: run one scheduler node in the foreground until SIGINT or
 * SIGTERM, then stop gracefully (hand back unstarted fires, wait for
 * running jobs up to --grace, resolve the rest by policy); a second signal
 * stops the running jobs at once.  Under systemd (Type=notify) it says
 * READY=1 once the node is registered and WATCHDOG=1 at every renewed
 * lease, so a node that cannot renew its lease for WatchdogSec is
 * restarted; outside systemd sd_notify does nothing.  With --http it also
 * serves the HTTP API, which owns its own threads and store handles
 * (src/http/) and is stopped before the node is freed.
 */
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <systemd/sd-daemon.h>

#include "cli/cli.h"
#include "core/log.h"
#include "core/timeutil.h"
#include "dbcron/node.h"
#include "http/http.h"
#include "sched/stats.h"

static dbcron_node *running_node;
static volatile sig_atomic_t signals_seen;

static void on_signal(int sig)
{
	(void)sig;
	if (!running_node)
		return;
	if (signals_seen++)
		dbcron_node_stop_now(running_node);
	else
		dbcron_node_stop(running_node);
}

/* The node's alive callback, on its database thread. */
static void notify_alive(void *ctx)
{
	bool *ready = ctx;
	sd_notify(0, *ready ? "WATCHDOG=1" : "READY=1\nWATCHDOG=1");
	*ready = true;
}

static void help(FILE *f)
{
	fprintf(f,
		"usage: dbcron node [--db URL | --db-file PATH] [--node-id ID] [--workers N]\n"
		"                   [--slow-workers N]\n"
		"                   [--claim-batch N] [--max-inflight N] [--preread DUR]\n"
		"                   [--claim-strategy per-row|lock-row]\n"
		"                   [--lease DUR] [--heartbeat DUR] [--grace DUR] [--retention DUR|forever]\n"
		"                   [--log-runs] [--quiet] [--http ADDR:PORT [--api-token-file PATH]\n"
		"                   [--metrics-max-jobs N]]\n\n"
		"Run a scheduler node until SIGINT or SIGTERM (a second one stops running jobs at\n"
		"once instead of after --grace).  Under systemd (Type=notify) it sends READY=1 once\n"
		"registered and WATCHDOG=1 at every renewed lease.\n\n"
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
		"  --log-runs         log every run start and end (default: only failures,\n"
		"                     skips, misfires, takeovers and lease events)\n"
		"  --quiet            log warnings and errors only\n"
		"  --http ADDR:PORT   also serve the HTTP API (docs/http.md) there, on threads and\n"
		"                     database connections of its own; a loopback address unless\n"
		"                     --api-token-file is given\n"
		"  --api-token-file PATH  lines 'TOKEN ROLE' (ROLE read or admin; TOKEN may be\n"
		"                     sha256:HEX); without it the API is read-only\n"
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

static int parse_int(const char *flag, const char *v, int min, int *out)
{
	char *end;
	long x = strtol(v, &end, 10);
	if (!*v || *end || x < min || x > INT_MAX)
		return cli_usage_error("node", "%s: '%s' is not an integer >= %d", flag, v, min);
	*out = (int)x;
	return 0;
}

static int parse_dur(const char *flag, const char *v, int64_t *out)
{
	dbcron_err err = {0};
	if (dbcron__parse_duration(v, 0, out, &err))
		return cli_usage_error("node", "%s: %s", flag, err.msg);
	return 0;
}

int cli_node(int argc, char **argv)
{
	enum { O_DB = 256, O_DB_FILE, O_ID, O_WORKERS, O_SLOW, O_BATCH, O_INFLIGHT, O_PREREAD, O_STRATEGY,
	       O_LEASE, O_HB, O_GRACE, O_LOGRUNS, O_QUIET, O_RETENTION, O_HTTP, O_TOKENS, O_MAXJOBS };
	static const struct option opts[] = {
		{"db", required_argument, NULL, O_DB},
		{"db-file", required_argument, NULL, O_DB_FILE},
		{"node-id", required_argument, NULL, O_ID},
		{"workers", required_argument, NULL, O_WORKERS},
		{"slow-workers", required_argument, NULL, O_SLOW},
		{"claim-batch", required_argument, NULL, O_BATCH},
		{"max-inflight", required_argument, NULL, O_INFLIGHT},
		{"preread", required_argument, NULL, O_PREREAD},
		{"claim-strategy", required_argument, NULL, O_STRATEGY},
		{"lease", required_argument, NULL, O_LEASE},
		{"heartbeat", required_argument, NULL, O_HB},
		{"grace", required_argument, NULL, O_GRACE},
		{"log-runs", no_argument, NULL, O_LOGRUNS},
		{"retention", required_argument, NULL, O_RETENTION},
		{"quiet", no_argument, NULL, O_QUIET},
		{"http", required_argument, NULL, O_HTTP},
		{"api-token-file", required_argument, NULL, O_TOKENS},
		{"metrics-max-jobs", required_argument, NULL, O_MAXJOBS},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	dbcron_node_config cfg;
	dbcron_node_config_init(&cfg);
	cli_db db = {0};
	bool preread_set = false;
	http_config hc;
	http_config_init(&hc);
	int c, rc;
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		rc = 0;
		switch (c) {
		case O_DB: cli_db_set_url(&db, optarg); break;
		case O_DB_FILE: db.file = optarg; break;
		case O_ID: cfg.node_id = optarg; break;
		case O_WORKERS: rc = parse_int("--workers", optarg, 1, &cfg.workers); break;
		case O_SLOW: rc = parse_int("--slow-workers", optarg, 1, &cfg.slow_workers); break;
		case O_BATCH: rc = parse_int("--claim-batch", optarg, 1, &cfg.claim_batch); break;
		case O_INFLIGHT: rc = parse_int("--max-inflight", optarg, 1, &cfg.max_inflight); break;
		case O_PREREAD:
			rc = parse_dur("--preread", optarg, &cfg.preread_ms);
			preread_set = true;
			break;
		case O_STRATEGY:
			if (strcmp(optarg, "per-row") == 0)
				cfg.claim_strategy = DBCRON_CLAIM_PER_ROW;
			else if (strcmp(optarg, "lock-row") == 0)
				cfg.claim_strategy = DBCRON_CLAIM_LOCK_ROW;
			else
				return cli_usage_error("node", "--claim-strategy: '%s' is not per-row or lock-row",
						       optarg);
			break;
		case O_LEASE: rc = parse_dur("--lease", optarg, &cfg.lease_ms); break;
		case O_HB: rc = parse_dur("--heartbeat", optarg, &cfg.heartbeat_ms); break;
		case O_GRACE: rc = parse_dur("--grace", optarg, &cfg.grace_ms); break;
		case O_LOGRUNS: cfg.log_runs = true; break;
		case O_RETENTION:
			if (strcmp(optarg, "forever") == 0) {
				cfg.retention_ms = -1;
				break;
			}
			rc = parse_dur("--retention", optarg, &cfg.retention_ms);
			break;
		case O_QUIET: dbcron__log_set_level(LOG_WARN); break;
		case O_HTTP: hc.listen = optarg; break;
		case O_TOKENS: hc.token_file = optarg; break;
		case O_MAXJOBS: {
			int v = 0;
			rc = parse_int("--metrics-max-jobs", optarg, 0, &v);
			if (!rc)
				hc.metrics_max_jobs = (size_t)v;
			break;
		}
		case 'h': help(stdout); return 0;
		default:
			return cli_usage_error("node", "unknown or incomplete option '%s'", argv[optind - 1]);
		}
		if (rc)
			return rc;
	}
	if (optind < argc)
		return cli_usage_error("node", "unexpected argument '%s'", argv[optind]);
	if (cfg.claim_strategy == DBCRON_CLAIM_LOCK_ROW && !preread_set)
		cfg.preread_ms = 0; /* the node's lock-row default */
	if (cfg.heartbeat_ms * 2 > cfg.lease_ms)
		return cli_usage_error("node", "--lease must be at least twice --heartbeat");
	if (hc.token_file && !hc.listen)
		return cli_usage_error("node", "--api-token-file needs --http");
	cfg.db_url = cli_db_url("node", &db, &rc);
	if (!cfg.db_url)
		return rc;

	bool ready = false;
	cfg.alive = notify_alive;
	cfg.alive_ctx = &ready;
	dbcron_err err = {0};
	dbcron_node *n = NULL;
	http_server *hs = NULL;
	if (dbcron_node_create(&cfg, &n, &err))
		return cli_fail(&err);
	hc.db_url = cfg.db_url;
	hc.stats = dbcron__node_stats(n);
	if (hc.listen && http_server_start(&hc, &hs, &err)) {
		dbcron_node_free(n);
		return cli_fail(&err);
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	running_node = n;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	rc = dbcron_node_run(n, &err);
	running_node = NULL;
	http_server_stop(hs);
	dbcron_node_free(n);
	return rc ? cli_fail(&err) : 0;
}
