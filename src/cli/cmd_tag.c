/*
 * `dbcron tag set|list|delete`: concurrency caps by tag (issue 28 item 3,
 * docs/scheduler.md "Concurrency caps").  The rules are the app layer's
 * (app_tag_set: a cap on a tag no job carries is refused); the cap itself
 * is kept by the claim.  This file parses argv and prints.  The csv
 * columns are a contract: new ones only go after the last.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/app.h"
#include "cli/cli.h"

static void tag_usage(FILE *f)
{
	fprintf(f, "usage: dbcron tag set TAG --max-running N [--db URL | --db-file PATH]\n"
		   "       dbcron tag list [--format table|csv|json] [--db URL | --db-file PATH]\n"
		   "       dbcron tag delete TAG [--db URL | --db-file PATH]\n\n"
		   "Concurrency caps: at no instant do more than N runs of the jobs carrying TAG\n"
		   "(job add --tag TAG) run in the whole cluster, checked by the claim.  Fires over\n"
		   "the cap wait and start as slots free, in due-time order, or are recorded\n"
		   "SKIPPED when the job's overlap policy is skip (docs/scheduler.md).  A cap on\n"
		   "a tag no job carries is refused.  list shows each capped tag, its runs now\n"
		   "(claimed or running) and how many jobs carry it; delete lifts the cap.\n"
		   "  --max-running N   the cap, 0 to %d (0 holds the tag's fires)\n\n" CLI_DB_HELP,
		1000000);
}

static int tag_opt(void *ctx, int c, char *arg)
{
	(void)c;
	*(const char **)ctx = arg;
	return 0;
}

static void print_tags(json_t *a, int fmt)
{
	size_t i;
	json_t *o;
	if (fmt == CLI_FMT_JSON) {
		if (json_dumpf(a, stdout, JSON_COMPACT) == 0)
			fputc('\n', stdout);
		return;
	}
	if (fmt == CLI_FMT_CSV)
		printf("tag,max_running,running,jobs\n");
	else if (!json_array_size(a))
		printf("no capped tags\n");
	else
		printf("%-24s  %11s  %7s  %5s\n", "TAG", "MAX RUNNING", "RUNNING", "JOBS");
	json_array_foreach(a, i, o) {
		const char *name = json_string_value(json_object_get(o, "name"));
		long long max = json_integer_value(json_object_get(o, "max_running"));
		long long run = json_integer_value(json_object_get(o, "running"));
		long long jobs = json_integer_value(json_object_get(o, "jobs"));
		if (fmt == CLI_FMT_CSV) {
			cli_csv_field(stdout, name);
			printf(",%lld,%lld,%lld\n", max, run, jobs);
		} else {
			printf("%-24s  %11lld  %7lld  %5lld\n", name ? name : "", max, run, jobs);
		}
	}
}

/* The verb on tag name (NULL for list), store open. */
static int tag_verb(store *s, const char *verb, const char *name, const char *max, int fmt)
{
	dbcron_err err = {0};
	json_t *a = NULL;
	if (!strcmp(verb, "list")) {
		if (app_tags_list(s, &a, &err))
			return cli_fail_in("tag list", &err);
		print_tags(a, fmt);
		json_decref(a);
		return 0;
	}
	if (!strcmp(verb, "delete")) {
		if (app_tag_delete(s, name, &err))
			return cli_fail_in("tag delete", &err);
		printf("tag '%s': cap lifted\n", name);
		return 0;
	}
	char *end;
	errno = 0;
	long n = strtol(max, &end, 10);
	if (!*max || *end || errno || n < 0 || n > 1000000)
		return cli_usage_error("tag set", "--max-running: '%s' is not a whole number from 0 "
				       "to 1000000", max);
	if (app_tag_set(s, name, (int)n, &err))
		return cli_fail_in("tag set", &err);
	printf("tag '%s': at most %ld running in the cluster\n", name, n);
	return 0;
}

int cli_tag(int argc, char **argv)
{
	static const struct option own[] = {
		{"max-running", required_argument, NULL, 'm'},
		{NULL, 0, NULL, 0},
	};
	static const char *const formats[] = {"table", "csv", "json", NULL};
	const char *max = NULL;
	const cli_spec sp = {.cmd = "tag",
			     .common = CLI_COMMON_DB | CLI_COMMON_FORMAT | CLI_COMMON_HELP,
			     .own = own, .usage = tag_usage, .formats = formats,
			     .own_opt = tag_opt, .ctx = &max};
	cliopt o;
	cli_common cm;
	int status = cli_parse(&sp, &o, &cm, argc, argv);
	if (status >= 0)
		return status;
	const char *verb = o.npos > 0 ? o.pos[0] : NULL;
	if (!verb || (strcmp(verb, "set") && strcmp(verb, "list") && strcmp(verb, "delete")))
		return cli_usage_error("tag", "expected set, list or delete (dbcron tag --help)");
	bool list = !strcmp(verb, "list");
	if (o.npos != (list ? 1 : 2) || o.dashdash)
		return cli_usage_error("tag", list ? "tag list takes no TAG" : "tag %s takes one TAG",
				       verb);
	if (!strcmp(verb, "set") != (max != NULL))
		return cli_usage_error("tag", max ? "--max-running is tag set's only"
						  : "tag set needs --max-running N");
	if (!list && cm.format)
		return cli_usage_error("tag", "--format is tag list's only");
	store *s = NULL;
	if ((status = cli_open_store("tag", &cm.db, &s)))
		return status;
	status = tag_verb(s, verb, list ? NULL : o.pos[1], max, cli_format_of(cm.format));
	store_close(s);
	return status;
}
