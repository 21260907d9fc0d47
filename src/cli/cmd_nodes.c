/*
 * `dbcron nodes`: the node registry as a table, csv or json, and `nodes
 * --prune OLDER`, which deletes the rows of long-gone nodes.  Ages
 * ("12s ago") are taken against the database's clock, like every
 * scheduling decision.  Which rows --prune may delete is the store's rule
 * (app_nodes_prune: never an alive node, never one whose runs are still
 * to resolve); this file parses argv and prints.  The csv columns are a
 * contract: new ones only go after the last.
 */
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "app/app.h"
#include "cli/cli.h"
#include "core/timeutil.h"
#include "model/json.h"

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
	int fmt;
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
	if (nc->fmt == CLI_FMT_CSV) {
		cli_csv_field(stdout, nr->node_id);
		fputc(',', stdout);
		cli_csv_field(stdout, nr->host);
		printf(",%d,", nr->pid);
		cli_csv_field(stdout, nr->state);
		printf(",%d,%" PRId64 ",", nr->workers, nr->running);
		cli_csv_ms(stdout, nr->started_ms);
		fputc(',', stdout);
		cli_csv_ms(stdout, nr->heartbeat_ms);
		fputc(',', stdout);
		cli_csv_ms(stdout, nr->lease_until);
		printf(",%" PRId64 "\n", nr->heartbeat_ms >= 0 ? nc->now - nr->heartbeat_ms : 0);
	} else if (nc->fmt == CLI_FMT_JSON) {
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

/* nodes --prune OLDER: the rule is the store's (app_nodes_prune). */
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
	if (app_nodes_prune(s, ms, &deleted, &err))
		status = cli_fail(&err);
	else
		printf("pruned %lld node row%s (stopped or dead, last heartbeat over %s ago, no "
		       "runs to resolve)\n",
		       (long long)deleted, deleted == 1 ? "" : "s", older);
	store_close(s);
	return status;
}

/* --prune OLDER, nodes' one option of its own. */
static int nodes_opt(void *ctx, int c, char *arg)
{
	(void)c;
	*(const char **)ctx = arg;
	return 0;
}

int cli_nodes(int argc, char **argv)
{
	static const struct option own[] = {
		{"prune", required_argument, NULL, 'p'},
		{NULL, 0, NULL, 0},
	};
	static const char *const formats[] = {"table", "csv", "json", NULL};
	const char *prune = NULL;
	const cli_spec sp = {.cmd = "nodes",
			     .common = CLI_COMMON_DB | CLI_COMMON_FORMAT | CLI_COMMON_HELP,
			     .own = own, .usage = nodes_usage, .formats = formats,
			     .own_opt = nodes_opt, .ctx = &prune};
	cliopt o;
	cli_common cm;

	int status = cli_parse(&sp, &o, &cm, argc, argv);
	if (status >= 0 || (status = cliopt_no_pos(&o)))
		return status;
	int fmt = cli_format_of(cm.format);
	bool fmt_set = cm.format != NULL;
	if (prune)
		return prune_nodes(&cm.db, prune, fmt_set);
	store *s = NULL;
	if ((status = cli_open_store(o.cmd, &cm.db, &s)))
		return status;
	dbcron_err err = {0};
	node_ctx nc = {.fmt = fmt};
	int rc = app_now_ms(s, &nc.now, &err);
	if (rc)
		goto out_rc;
	if (fmt == CLI_FMT_CSV)
		printf("node,host,pid,state,workers,running,started_ms,heartbeat_ms,"
		       "lease_until_ms,heartbeat_age_ms\n");
	else if (fmt == CLI_FMT_JSON)
		fputc('[', stdout);
	rc = app_nodes_each(s, print_node, &nc, &err);
	if (!rc && nc.failed)
		rc = dbcron_err_set(&err, DBCRON_ENOMEM, "out of memory writing JSON");
	if (fmt == CLI_FMT_JSON)
		fputs(nc.n ? "\n]\n" : "]\n", stdout);
	else if (fmt == CLI_FMT_TABLE && nc.n == 0 && !rc)
		printf("no nodes\n");
out_rc:
	if (rc)
		status = cli_fail(&err);
	store_close(s);
	return status;
}
