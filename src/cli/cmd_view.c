/*
 * `dbcron runs` and `dbcron nodes`: read-only views of the run log and the
 * node registry, as a table for people and csv/json for programs.  The csv
 * columns of `runs` are a contract (issue 3): job, fire_at_ms, attempt,
 * state, node, started_ms, finished_ms, exit_code first, in that order,
 * UTC epoch milliseconds, empty when unset; new columns only go after them.
 * Ages ("12s ago") are taken against the database's clock, like every
 * scheduling decision.  A run's JSON object is model_run_json's, the same
 * any other front end prints.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/app.h"
#include "cli/cli.h"
#include "core/alloc.h"
#include "core/timeutil.h"
#include "model/jobdef.h"
#include "model/json.h"

enum view_format { FMT_TABLE, FMT_CSV, FMT_JSON };

static int parse_format(const char *cmd, const char *v, enum view_format *out)
{
	if (!strcmp(v, "table"))
		*out = FMT_TABLE;
	else if (!strcmp(v, "csv"))
		*out = FMT_CSV;
	else if (!strcmp(v, "json"))
		*out = FMT_JSON;
	else
		return cli_usage_error(cmd, "--format '%s': expected table, csv or json", v);
	return 0;
}

/* ------------------------------------------------------- run helpers */

int cli_collect_run(void *ctx, const dbcron_run *run)
{
	cli_run_vec *rv = ctx;
	/* the token and the output are not shown in tables */
	if (dbcron__grow((void **)&rv->v, &rv->cap, rv->n + 1, sizeof(dbcron_run)) ||
	    app_run_copy(&rv->v[rv->n], run, false)) {
		rv->rc = DBCRON_ENOMEM;
		return 1;
	}
	rv->n++;
	return 0;
}

void cli_run_vec_free(cli_run_vec *rv)
{
	for (size_t i = 0; i < rv->n; i++)
		dbcron_run_clear(&rv->v[i]);
	dbcron__free(rv->v);
	memset(rv, 0, sizeof(*rv));
}

/* One line of text for a table cell: control characters become spaces,
 * long text is cut with "...". */
static void cell(char *buf, size_t len, const char *s, size_t max)
{
	size_t n = 0;
	if (!s)
		s = "";
	for (; *s && n + 1 < len && n < max; s++)
		buf[n++] = iscntrl((unsigned char)*s) ? ' ' : *s;
	if (*s && n >= 3 && n == max) {
		buf[n - 3] = buf[n - 2] = buf[n - 1] = '.';
	}
	buf[n] = '\0';
}

static void run_duration(const dbcron_run *r, char *buf, size_t len)
{
	if (r->started_ms >= 0 && r->finished_ms >= r->started_ms)
		dbcron__format_duration(r->finished_ms - r->started_ms, buf, len);
	else
		snprintf(buf, len, "-");
}

void cli_print_runs_table(FILE *f, const dbcron_run *runs, size_t n,
			  bool with_job)
{
	int wj = 3, wn = 4;
	for (size_t i = 0; i < n; i++) {
		int l = runs[i].job_name ? (int)strlen(runs[i].job_name) : 0;
		wj = l > wj ? l : wj;
		l = runs[i].node ? (int)strlen(runs[i].node) : 1;
		wn = l > wn ? l : wn;
	}
	if (with_job)
		fprintf(f, "%-8s  %-*s  ", "RUN", wj, "JOB");
	else
		fprintf(f, "  %-8s  ", "RUN");
	fprintf(f, "%-24s  %3s  %-9s  %-*s  %-24s  %-8s  %4s  %s\n", "FIRE AT", "TRY",
		"STATE", wn, "NODE", "STARTED", "TOOK", "EXIT", "ERROR");
	for (size_t i = 0; i < n; i++) {
		const dbcron_run *r = &runs[i];
		char fire[64], start[64], took[32], code[16], error[96];
		model_time_text(r->fire_at, fire, sizeof(fire));
		model_time_text(r->started_ms, start, sizeof(start));
		run_duration(r, took, sizeof(took));
		if (r->has_exit_code)
			snprintf(code, sizeof(code), "%d", r->exit_code);
		else
			snprintf(code, sizeof(code), "-");
		cell(error, sizeof(error), r->error, 80);
		if (r->missed > 0) {
			size_t l = strlen(error);
			snprintf(error + l, sizeof(error) - l, "%s(%" PRId64 " missed)",
				 l ? " " : "", r->missed);
		}
		if (with_job)
			fprintf(f, "%-8" PRId64 "  %-*s  ", r->id, wj,
				r->job_name ? r->job_name : "");
		else
			fprintf(f, "  %-8" PRId64 "  ", r->id);
		fprintf(f, "%-24s  %3d  %-9s  %-*s  %-24s  %-8s  %4s  %s\n", fire, r->attempt,
			dbcron_run_state_name(r->state), wn, r->node ? r->node : "-", start,
			took, code, error);
	}
}

/* ------------------------------------------------------------- csv */

/* RFC 4180: quote a field that holds a comma, a quote or a line break. */
static void csv_field(FILE *f, const char *s)
{
	if (!s)
		return;
	if (!strpbrk(s, ",\"\r\n")) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

static void csv_ms(FILE *f, int64_t ms)
{
	if (ms >= 0)
		fprintf(f, "%" PRId64, ms);
}

static const char runs_csv_header[] =
	"job,fire_at_ms,attempt,state,node,started_ms,finished_ms,exit_code,"
	"missed,error,run_id,due_at_ms";

static void csv_run(FILE *f, const dbcron_run *r)
{
	csv_field(f, r->job_name);
	fprintf(f, ",%" PRId64 ",%d,%s,", r->fire_at, r->attempt,
		dbcron_run_state_name(r->state));
	csv_field(f, r->node);
	fputc(',', f);
	csv_ms(f, r->started_ms);
	fputc(',', f);
	csv_ms(f, r->finished_ms);
	fputc(',', f);
	if (r->has_exit_code)
		fprintf(f, "%d", r->exit_code);
	fprintf(f, ",%" PRId64 ",", r->missed);
	csv_field(f, r->error);
	fprintf(f, ",%" PRId64 ",", r->id);
	csv_ms(f, r->due_at);
	fputc('\n', f);
}

/* ------------------------------------------------------------- runs */

static void runs_usage(FILE *f)
{
	fprintf(f,
		"usage: dbcron runs [--job NAME] [--state S] [--since TIME] [--limit N]\n"
		"                   [--format table|csv|json] [--db URL | --db-file PATH]\n\n"
		"The run log, newest first.  --state: scheduled, running, succeeded, failed,\n"
		"timed_out, skipped, misfired, abandoned.  --since: runs whose fire time is at\n"
		"or after TIME (RFC 3339, epoch seconds, now, now+DUR; now is the database's).\n"
		"--limit N (default 50; 0 = all).  csv columns: %s\n"
		"(times in UTC epoch milliseconds, empty when unset).\n\n" CLI_DB_HELP,
		runs_csv_header);
}

typedef struct stream_ctx {
	enum view_format fmt;
	size_t n;
	bool failed;
} stream_ctx;

static int stream_run(void *ctx, const dbcron_run *r)
{
	stream_ctx *sc = ctx;
	if (sc->fmt == FMT_CSV) {
		csv_run(stdout, r);
	} else {
		json_t *o = model_run_json(r);
		if (!o) {
			sc->failed = true;
			return 1;
		}
		fputs(sc->n ? ",\n" : "\n", stdout);
		int rc = json_dumpf(o, stdout, JSON_COMPACT | JSON_ENSURE_ASCII);
		json_decref(o);
		if (rc) {
			sc->failed = true;
			return 1;
		}
	}
	sc->n++;
	return 0;
}

int cli_runs(int argc, char **argv)
{
	static const struct option longs[] = {
		{"db", required_argument, NULL, 'd'},
		{"db-file", required_argument, NULL, 'F'},
		{"job", required_argument, NULL, 'j'},
		{"state", required_argument, NULL, 's'},
		{"since", required_argument, NULL, 'S'},
		{"limit", required_argument, NULL, 'l'},
		{"format", required_argument, NULL, 'f'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	cliopt o = {.cmd = "runs"};
	const char *since = NULL;
	cli_db db = {0};
	store_run_filter flt = {.job = NULL, .state = 0, .since_ms = -1, .limit = 50};
	enum view_format fmt = FMT_TABLE;
	int c, status;

	cliopt_reset();
	while ((c = cliopt_next(&o, argc, argv, "+:h", longs)) != -1) {
		switch (c) {
		case 'd':
			cli_db_set_url(&db, optarg);
			break;
		case 'F':
			db.file = optarg;
			break;
		case 'j':
			flt.job = optarg;
			break;
		case 's': {
			char low[32];
			size_t i;
			for (i = 0; optarg[i] && i + 1 < sizeof(low); i++)
				low[i] = (char)tolower((unsigned char)optarg[i]);
			low[i] = '\0';
			flt.state = dbcron_run_state_parse(low);
			if (flt.state < 0)
				return cli_usage_error("runs",
					"--state '%s': expected scheduled, running, succeeded, failed, timed_out, skipped, misfired or abandoned",
					optarg);
			break;
		}
		case 'S':
			since = optarg;
			break;
		case 'l': {
			char *end;
			errno = 0;
			long v = strtol(optarg, &end, 10);
			if (!*optarg || *end || errno || v < 0)
				return cli_usage_error("runs",
					"--limit '%s': expected a whole number >= 0 (0 = no limit)", optarg);
			flt.limit = v;
			break;
		}
		case 'f':
			if ((status = parse_format("runs", optarg, &fmt)))
				return status;
			break;
		case 'h':
			runs_usage(stdout);
			return CLI_EXIT_OK;
		default:
			return CLI_EXIT_USAGE;
		}
	}
	if (o.npos || o.dashdash)
		return cli_usage_error("runs", "unexpected argument '%s'",
				       o.npos ? o.pos[0] : "--");
	dbcron_err err = {0};
	int64_t ms;
	/* the syntax before the database, so a typo costs no connection */
	if (since && dbcron__parse_time(since, 0, &ms, &err))
		return cli_usage_error("runs", "--since: %s", err.msg);

	store *s = NULL;
	if ((status = cli_open_store(o.cmd, &db, &s)))
		return status;
	int64_t now;
	int rc = DBCRON_OK;
	if (since) {
		rc = store_now_ms(s, &now, &err);
		if (!rc)
			rc = dbcron__parse_time(since, now, &flt.since_ms, &err);
		if (rc)
			goto out_rc;
	}
	if (fmt == FMT_TABLE) {
		cli_run_vec rv = {0};
		rc = store_runs_list(s, &flt, cli_collect_run, &rv, &err);
		if (!rc && rv.rc)
			rc = dbcron_err_set(&err, rv.rc, "out of memory");
		if (!rc) {
			if (rv.n)
				cli_print_runs_table(stdout, rv.v, rv.n, true);
			else
				printf("no runs\n");
		}
		cli_run_vec_free(&rv);
		goto out_rc;
	}
	stream_ctx sc = {.fmt = fmt};
	if (fmt == FMT_CSV)
		printf("%s\n", runs_csv_header);
	else
		fputc('[', stdout);
	rc = store_runs_list(s, &flt, stream_run, &sc, &err);
	if (!rc && sc.failed)
		rc = dbcron_err_set(&err, DBCRON_ENOMEM, "out of memory writing JSON");
	if (fmt == FMT_JSON)
		fputs(sc.n ? "\n]\n" : "]\n", stdout);
out_rc:
	if (rc)
		status = cli_fail(&err);
	store_close(s);
	if (!status && (fflush(stdout) || ferror(stdout))) {
		fprintf(stderr, "dbcron runs: writing output: %s\n", strerror(errno));
		status = CLI_EXIT_FAIL;
	}
	return status;
}

/* ------------------------------------------------------------ nodes */

static void nodes_usage(FILE *f)
{
	fprintf(f, "usage: dbcron nodes [--format table|csv|json] [--db URL | --db-file PATH]\n"
		   "       dbcron nodes --prune OLDER [--db URL | --db-file PATH]\n\n"
		   "Scheduler nodes: state, workers, running runs, last heartbeat (and how\n"
		   "long ago, by the database's clock) and lease expiry.\n"
		   "--prune OLDER (a duration, e.g. 7d) deletes the rows of stopped and dead nodes\n"
		   "whose last heartbeat is older than that and that hold no run still to\n"
		   "resolve; alive nodes, and nodes whose runs a live node has yet to resolve,\n"
		   "stay.  Their finished runs keep the node's name.\n\n" CLI_DB_HELP);
}

typedef struct node_ctx {
	enum view_format fmt;
	int64_t now;
	size_t n;
	bool failed;
} node_ctx;

static void ago(int64_t now, int64_t then, char *buf, size_t len)
{
	if (then < 0) {
		snprintf(buf, len, "never");
		return;
	}
	int64_t d = now - then;
	if (d < 0)
		snprintf(buf, len, "in %" PRId64 "s", -d / 1000);
	else
		snprintf(buf, len, "%" PRId64 "s ago", d / 1000);
}

static int print_node(void *ctx, const store_node_row *nr)
{
	node_ctx *nc = ctx;
	char hb[64], lease[64], a[32];
	ago(nc->now, nr->heartbeat_ms, a, sizeof(a));
	if (nc->fmt == FMT_CSV) {
		csv_field(stdout, nr->node_id);
		fputc(',', stdout);
		csv_field(stdout, nr->host);
		printf(",%d,", nr->pid);
		csv_field(stdout, nr->state);
		printf(",%d,%" PRId64 ",", nr->workers, nr->running);
		csv_ms(stdout, nr->started_ms);
		fputc(',', stdout);
		csv_ms(stdout, nr->heartbeat_ms);
		fputc(',', stdout);
		csv_ms(stdout, nr->lease_until);
		printf(",%" PRId64 "\n", nr->heartbeat_ms >= 0 ? nc->now - nr->heartbeat_ms : 0);
	} else if (nc->fmt == FMT_JSON) {
		json_t *o = app_node_json(nr, nc->now);
		if (!o) {
			nc->failed = true;
			return 1;
		}
		fputs(nc->n ? ",\n" : "\n", stdout);
		int rc = json_dumpf(o, stdout, JSON_COMPACT | JSON_ENSURE_ASCII);
		json_decref(o);
		if (rc) {
			nc->failed = true;
			return 1;
		}
	} else {
		if (nc->n == 0)
			printf("%-20s  %-16s  %7s  %-7s  %7s  %7s  %-24s  %-10s  %s\n", "NODE",
			       "HOST", "PID", "STATE", "WORKERS", "RUNNING", "LAST HEARTBEAT",
			       "AGE", "LEASE UNTIL");
		printf("%-20s  %-16s  %7d  %-7s  %7d  %7" PRId64 "  %-24s  %-10s  %s\n",
		       nr->node_id ? nr->node_id : "", nr->host ? nr->host : "", nr->pid,
		       nr->state ? nr->state : "", nr->workers, nr->running,
		       model_time_text(nr->heartbeat_ms, hb, sizeof(hb)), a,
		       model_time_text(nr->lease_until, lease, sizeof(lease)));
	}
	nc->n++;
	return 0;
}

/* nodes --prune OLDER: the rule is the store's (store_nodes_prune). */
static int prune_nodes(const cli_db *db, const char *older, bool fmt_set)
{
	dbcron_err err = {0};
	int64_t ms, deleted = 0;
	if (fmt_set)
		return cli_usage_error("nodes", "--prune prints a count, not a --format");
	if (dbcron__parse_duration(older, 1, &ms, &err))
		return cli_usage_error("nodes", "--prune: %s", err.msg);
	store *s = NULL;
	int status = cli_open_store("nodes", db, &s);
	if (status)
		return status;
	if (store_nodes_prune(s, ms, &deleted, &err))
		status = cli_fail(&err);
	else
		printf("pruned %lld node row%s (stopped or dead, last heartbeat over %s ago, no "
		       "runs to resolve)\n",
		       (long long)deleted, deleted == 1 ? "" : "s", older);
	store_close(s);
	return status;
}

int cli_nodes(int argc, char **argv)
{
	static const struct option longs[] = {
		{"db", required_argument, NULL, 'd'},
		{"db-file", required_argument, NULL, 'F'},
		{"format", required_argument, NULL, 'f'},
		{"prune", required_argument, NULL, 'p'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	cliopt o = {.cmd = "nodes"};
	cli_db db = {0};
	enum view_format fmt = FMT_TABLE;
	bool fmt_set = false;
	const char *prune = NULL;
	int c, status;

	cliopt_reset();
	while ((c = cliopt_next(&o, argc, argv, "+:h", longs)) != -1) {
		switch (c) {
		case 'd':
			cli_db_set_url(&db, optarg);
			break;
		case 'F':
			db.file = optarg;
			break;
		case 'f':
			if ((status = parse_format("nodes", optarg, &fmt)))
				return status;
			fmt_set = true;
			break;
		case 'p':
			prune = optarg;
			break;
		case 'h':
			nodes_usage(stdout);
			return CLI_EXIT_OK;
		default:
			return CLI_EXIT_USAGE;
		}
	}
	if (o.npos || o.dashdash)
		return cli_usage_error("nodes", "unexpected argument '%s'",
				       o.npos ? o.pos[0] : "--");
	if (prune)
		return prune_nodes(&db, prune, fmt_set);
	store *s = NULL;
	if ((status = cli_open_store(o.cmd, &db, &s)))
		return status;
	dbcron_err err = {0};
	node_ctx nc = {.fmt = fmt};
	int rc = store_now_ms(s, &nc.now, &err);
	if (rc)
		goto out_rc;
	if (fmt == FMT_CSV)
		printf("node,host,pid,state,workers,running,started_ms,heartbeat_ms,"
		       "lease_until_ms,heartbeat_age_ms\n");
	else if (fmt == FMT_JSON)
		fputc('[', stdout);
	rc = store_nodes_list(s, print_node, &nc, &err);
	if (!rc && nc.failed)
		rc = dbcron_err_set(&err, DBCRON_ENOMEM, "out of memory writing JSON");
	if (fmt == FMT_JSON)
		fputs(nc.n ? "\n]\n" : "]\n", stdout);
	else if (fmt == FMT_TABLE && nc.n == 0 && !rc)
		printf("no nodes\n");
out_rc:
	if (rc)
		status = cli_fail(&err);
	store_close(s);
	return status;
}
