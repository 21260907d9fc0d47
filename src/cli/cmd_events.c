/*
 * `dbcron events`: the outbox (docs/reactions.md), each event and where
 * its delivery stands, as a table, csv or json; the listing is the app
 * layer's (app_events_list, the same as GET /api/v1/events), this file
 * parses argv and prints.  The csv columns are a contract: new ones only
 * go after the last.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/app.h"
#include "cli/cli.h"

static void events_usage(FILE *f)
{
	fprintf(f, "usage: dbcron events [--job NAME] [--state S] [--limit N]\n"
		   "                     [--format table|csv|json] [--db URL | --db-file PATH]\n\n"
		   "The events that jobs' reactions raised (job add's on-failure, on-success and\n"
		   "on-misfire), newest first, and their delivery: pending, delivering,\n"
		   "delivered or failed, with attempts and the last error (docs/reactions.md).\n"
		   "  --job NAME   only this job's events\n"
		   "  --state S    only events in state S\n"
		   "  --limit N    at most N events (default 100, at most 10000)\n\n" CLI_DB_HELP);
}

typedef struct events_opts {
	const char *job, *state, *limit;
} events_opts;

static int events_opt(void *ctx, int c, char *arg)
{
	events_opts *eo = ctx;
	if (c == 'j')
		eo->job = arg;
	else if (c == 's')
		eo->state = arg;
	else
		eo->limit = arg;
	return 0;
}

static const char *str(json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));
	return s ? s : "";
}

static void print_csv(json_t *a)
{
	static const char *const cols[] = {"job", "kind", "target", "state", "last_error",
					   "node", "created_at", "finished_at"};
	size_t i;
	json_t *o;
	printf("id,job,run_id,kind,target,state,attempts,last_error,node,created_at,finished_at\n");
	json_array_foreach(a, i, o) {
		printf("%lld,", (long long)json_integer_value(json_object_get(o, "id")));
		cli_csv_field(stdout, str(o, cols[0]));
		json_t *rid = json_object_get(o, "run_id"); /* null: an overdue event, no run */
		if (json_is_integer(rid))
			printf(",%lld", (long long)json_integer_value(rid));
		else
			fputc(',', stdout);
		for (size_t k = 1; k < sizeof(cols) / sizeof(cols[0]); k++) {
			fputc(',', stdout);
			cli_csv_field(stdout, str(o, cols[k]));
			if (k == 3)
				printf(",%lld", (long long)json_integer_value(
							json_object_get(o, "attempts")));
		}
		fputc('\n', stdout);
	}
}

static void print_table(json_t *a)
{
	size_t i;
	json_t *o;
	if (!json_array_size(a)) {
		printf("no events\n");
		return;
	}
	printf("%-6s  %-16s  %-8s  %-10s  %-10s  %3s  %-24s  %s\n", "ID", "JOB", "RUN", "KIND",
	       "STATE", "TRY", "CREATED", "TARGET (LAST ERROR)");
	json_array_foreach(a, i, o) {
		const char *why = str(o, "last_error");
		char run[24] = "-";
		json_t *rid = json_object_get(o, "run_id");
		if (json_is_integer(rid))
			snprintf(run, sizeof(run), "%lld", (long long)json_integer_value(rid));
		printf("%-6lld  %-16s  %-8s  %-10s  %-10s  %3lld  %-24s  %s%s%s%s\n",
		       (long long)json_integer_value(json_object_get(o, "id")), str(o, "job"), run,
		       str(o, "kind"), str(o, "state"),
		       (long long)json_integer_value(json_object_get(o, "attempts")),
		       str(o, "created_at"), str(o, "target"), *why ? " (" : "", why,
		       *why ? ")" : "");
	}
}

int cli_events(int argc, char **argv)
{
	static const struct option own[] = {
		{"job", required_argument, NULL, 'j'},
		{"state", required_argument, NULL, 's'},
		{"limit", required_argument, NULL, 'l'},
		{NULL, 0, NULL, 0},
	};
	static const char *const formats[] = {"table", "csv", "json", NULL};
	events_opts eo = {0};
	const cli_spec sp = {.cmd = "events",
			     .common = CLI_COMMON_DB | CLI_COMMON_FORMAT | CLI_COMMON_HELP,
			     .own = own, .usage = events_usage, .formats = formats,
			     .own_opt = events_opt, .ctx = &eo};
	cliopt o;
	cli_common cm;
	int status = cli_parse(&sp, &o, &cm, argc, argv);
	if (status >= 0 || (status = cliopt_no_pos(&o)))
		return status;
	long limit = 0;
	if (eo.limit) {
		char *end;
		errno = 0;
		limit = strtol(eo.limit, &end, 10);
		if (!*eo.limit || *end || errno || limit < 1)
			return cli_usage_error("events", "--limit: '%s' is not a positive integer",
					       eo.limit);
	}
	store *s = NULL;
	if ((status = cli_open_store("events", &cm.db, &s)))
		return status;
	dbcron_err err = {0};
	json_t *a = NULL;
	if (app_events_list(s, eo.job, eo.state, limit, &a, &err)) {
		status = err.code == DBCRON_EINVAL ? cli_usage_error("events", "--%s", err.msg)
						   : cli_fail(&err);
		goto out;
	}
	int fmt = cli_format_of(cm.format);
	if (fmt == CLI_FMT_JSON) {
		if (json_dumpf(a, stdout, JSON_COMPACT) == 0)
			fputc('\n', stdout);
	} else if (fmt == CLI_FMT_CSV) {
		print_csv(a);
	} else {
		print_table(a);
	}
out:
	json_decref(a);
	store_close(s);
	return status;
}
