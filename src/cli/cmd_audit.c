/*
 * `dbcron audit`: the audit trail (issue 29 item 2) as a table or json,
 * the newest --limit rows oldest first, as `dbcron runs` shows the run
 * log.  Who wrote each row and what it holds is the store's
 * (store/audit.c); the JSON form is the app's (app_audit_row_json), the
 * same as GET /api/v1/audit's.  This file parses argv and prints.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/app.h"
#include "cli/cli.h"
#include "model/jobdef.h"

/* The CHANGES column is cut here: the whole detail is in --format json. */
#define SUMMARY_MAX 100

static void audit_usage(FILE *f)
{
	fprintf(f,
		"usage: dbcron audit [--job NAME] [--since DUR|TIME] [--limit N]\n"
		"                    [--format table|json] [--db URL | --db-file PATH]\n\n"
		"The audit trail: every change to the jobs (add, set, apply, rename, pause,\n"
		"resume, delete, trigger) and every node's stop, with when (the database's\n"
		"clock), who (cli:USER and \"(sudo: NAME)\" for this command line, http:TOKEN\n"
		"for the HTTP API, lib:PROGRAM for a program using the library, node:ID for a\n"
		"node) and what: the before and after of each key that changed.  Values of\n"
		"--env and passwords in URLs are never recorded.  Each row is written in the\n"
		"same transaction as its change.\n"
		"The newest --limit N rows (default 50; 0 = all), oldest first.  --job: the\n"
		"rows of one job (a renamed job's rows before the rename keep its old name).\n"
		"--since: rows at or after TIME (RFC 3339, epoch seconds, now+DUR) or a\n"
		"duration back from now (30m, 7d); now is the database's.  A node's\n"
		"--retention prunes old rows with the run log.\n\n" CLI_DB_HELP);
}

typedef struct audit_args {
	store_audit_filter flt;
	const char *since;
} audit_args;

static int audit_opt(void *ctx, int c, char *arg)
{
	audit_args *a = ctx;
	if (c == 'j') {
		a->flt.job = arg;
	} else if (c == 'S') {
		a->since = arg;
	} else {
		char *end;
		errno = 0;
		long v = strtol(arg, &end, 10);
		if (!*arg || *end || errno || v < 0)
			return cli_usage_error("audit",
					       "--limit '%s': expected a whole number >= 0 (0 = no limit)",
					       arg);
		a->flt.limit = v;
	}
	return 0;
}

/* A value as the table shows it: text bare, the rest as compact JSON. */
static void put_value(char *buf, size_t len, size_t *at, json_t *v)
{
	char *t = NULL;
	const char *s = json_is_string(v) ? json_string_value(v)
					  : (t = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY));
	if (*at < len)
		*at += (size_t)snprintf(buf + *at, len - *at, "%s", s ? s : "?");
	free(t);
}

static void put_text(char *buf, size_t len, size_t *at, const char *s)
{
	if (*at < len)
		*at += (size_t)snprintf(buf + *at, len - *at, "%s", s);
}

/* "every: 30s -> 1m; paused: false -> true", "created", "run_id=7". */
static void summary(const char *detail, char *buf, size_t len)
{
	json_t *d = json_loads(detail, 0, NULL), *changes = json_object_get(d, "changes");
	const char *k;
	json_t *v;
	size_t at = 0;
	bool all_new = true, all_gone = true;
	buf[0] = '\0';
	json_object_foreach(changes, k, v) {
		all_new &= json_is_null(json_object_get(v, "before"));
		all_gone &= json_is_null(json_object_get(v, "after"));
	}
	if (json_object_size(changes) > 1 && (all_new || all_gone)) {
		put_text(buf, len, &at, all_new ? "created" : "deleted");
	} else {
		json_object_foreach(changes, k, v) {
			put_text(buf, len, &at, at ? "; " : "");
			put_text(buf, len, &at, k);
			put_text(buf, len, &at, ": ");
			put_value(buf, len, &at, json_object_get(v, "before"));
			put_text(buf, len, &at, " -> ");
			put_value(buf, len, &at, json_object_get(v, "after"));
		}
	}
	json_object_foreach(d, k, v) {
		if (!strcmp(k, "changes"))
			continue;
		put_text(buf, len, &at, at ? "; " : "");
		put_text(buf, len, &at, k);
		put_text(buf, len, &at, "=");
		put_value(buf, len, &at, v);
	}
	if (!d)
		snprintf(buf, len, "%s", detail);
	json_decref(d);
	if (strlen(buf) > SUMMARY_MAX)
		memcpy(buf + SUMMARY_MAX - 3, "...", 4);
}

typedef struct audit_ctx {
	int fmt;
	size_t n;
	bool failed;
} audit_ctx;

static int print_row(void *ctx, const store_audit_row *r)
{
	audit_ctx *ac = ctx;
	if (ac->fmt == CLI_FMT_JSON) {
		json_t *o = app_audit_row_json(r);
		fputs(ac->n ? ",\n" : "\n", stdout);
		if (!o || json_dumpf(o, stdout, JSON_COMPACT | JSON_ENSURE_ASCII)) {
			json_decref(o);
			ac->failed = true;
			return 1;
		}
		json_decref(o);
	} else {
		char at[64], sum[1024];
		summary(r->detail, sum, sizeof(sum));
		if (ac->n == 0)
			printf("%-24s  %-20s  %-15s  %-16s  %s\n", "AT", "ACTOR", "ACTION", "JOB",
			       "CHANGES");
		printf("%-24s  %-20s  %-15s  %-16s  %s\n", model_time_text(r->at_ms, at, sizeof(at)),
		       r->actor, r->action, r->job ? r->job : "-", sum);
	}
	ac->n++;
	return 0;
}

static int audit_list(const cli_common *cm, audit_args *a)
{
	dbcron_err err = {0};
	int fmt = cli_format_of(cm->format);
	int64_t now, ms;
	/* the syntax before the database: a typo costs no connection */
	if (a->since && app_audit_since(a->since, 0, &ms, &err))
		return cli_usage_error("audit", "--since: %s", err.msg);
	store *s = NULL;
	int status = cli_open_store("audit", &cm->db, &s);
	if (status)
		return status;
	audit_ctx ac = {.fmt = fmt};
	int rc = DBCRON_OK;
	if (a->since && ((rc = app_now_ms(s, &now, &err)) ||
			 (rc = app_audit_since(a->since, now, &a->flt.since_ms, &err))))
		goto out_rc;
	if (fmt == CLI_FMT_JSON)
		fputc('[', stdout);
	rc = app_audit_each(s, &a->flt, print_row, &ac, &err);
	if (!rc && ac.failed)
		rc = dbcron_err_set(&err, DBCRON_ENOMEM, "out of memory writing JSON");
	if (fmt == CLI_FMT_JSON)
		fputs(ac.n ? "\n]\n" : "]\n", stdout);
	else if (ac.n == 0 && !rc)
		printf("no audit rows\n");
out_rc:
	if (rc)
		status = cli_fail(&err);
	store_close(s);
	if (!status && (fflush(stdout) || ferror(stdout))) {
		fprintf(stderr, "dbcron audit: writing output: %s\n", strerror(errno));
		status = CLI_EXIT_FAIL;
	}
	return status;
}

int cli_audit(int argc, char **argv)
{
	static const struct option own[] = {
		{"job", required_argument, NULL, 'j'},
		{"since", required_argument, NULL, 'S'},
		{"limit", required_argument, NULL, 'l'},
		{NULL, 0, NULL, 0},
	};
	static const char *const formats[] = {"table", "json", NULL};
	audit_args a = {.flt = {.job = NULL, .since_ms = -1, .limit = 50}};
	const cli_spec sp = {.cmd = "audit",
			     .common = CLI_COMMON_DB | CLI_COMMON_FORMAT | CLI_COMMON_HELP,
			     .own = own, .usage = audit_usage, .formats = formats,
			     .own_opt = audit_opt, .ctx = &a};
	cliopt o;
	cli_common cm;
	int status = cli_parse(&sp, &o, &cm, argc, argv);
	if (status >= 0 || (status = cliopt_no_pos(&o)))
		return status;
	return audit_list(&cm, &a);
}
