/*
 * dbcron calendar add|list|show|delete: exclusion calendars (issue 28
 * item 7, app/calendar.c), named sets of days a job skips with
 * --exclude-calendar NAME.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "app/app.h"
#include "cli/cli.h"
#include "model/jobdef.h"

static void calendar_usage(FILE *f)
{
	fprintf(f,
		"usage: dbcron calendar add NAME --dates FILE\n"
		"       dbcron calendar list [--format table|json]\n"
		"       dbcron calendar show NAME [--format table|json]\n"
		"       dbcron calendar delete NAME\n\n"
		"Exclusion calendars: a job given --exclude-calendar NAME does not fire on\n"
		"the calendar's days, each read in the job's own time zone.\n\n"
		"  add     FILE (\"-\": stdin) has one day a line as YYYY-MM-DD; '#' starts\n"
		"          a comment, blank lines are skipped.  A bad line is refused with\n"
		"          the file and line, and nothing is written.  A calendar does not\n"
		"          change once added: delete it and add it again (a job keeps the\n"
		"          days it was written with until it is written again).\n"
		"  delete  refused while a job excludes the calendar\n\n" CLI_DB_HELP);
}

typedef struct cal_args {
	const char *dates;
} cal_args;

static int cal_opt(void *ctx, int c, char *arg)
{
	cal_args *a = ctx;
	if (c == 'd') {
		a->dates = arg;
		return 0;
	}
	return CLI_EXIT_USAGE;
}

static int list_one(void *ctx, const store_calendar *c)
{
	bool json = *(bool *)ctx;
	char t[64];
	if (json)
		return !cli_print_json_line(app_calendar_json(c, false));
	printf("%-24s  %6zu  %s\n", c->name, app_calendar_ndays(c->days),
	       model_time_text(c->created_ms, t, sizeof(t)));
	return 0;
}

static int show(store *s, const char *name, bool json, dbcron_err *err)
{
	store_calendar c;
	int rc = store_calendar_get(s, name, &c, err);
	if (rc)
		return rc;
	if (json) {
		if (!cli_print_json_line(app_calendar_json(&c, true)))
			rc = dbcron_err_set(err, DBCRON_ENOMEM, "out of memory");
	} else {
		printf("%s\n", c.days);
	}
	store_calendar_clear(&c);
	return rc;
}

static int calendar_run(const char *sub, const char *name, const cal_args *a, bool json,
			store *s, dbcron_err *err)
{
	size_t n = 0;
	int rc;
	if (!strcmp(sub, "add")) {
		if (!(rc = app_calendar_add(s, name, a->dates, &n, err)))
			printf("added calendar '%s': %zu days\n", name, n);
		return rc;
	}
	if (!strcmp(sub, "delete")) {
		if (!(rc = store_calendar_delete(s, name, err)))
			printf("deleted calendar '%s'\n", name);
		return rc;
	}
	if (!strcmp(sub, "show"))
		return show(s, name, json, err);
	if (!json)
		printf("%-24s  %6s  %s\n", "NAME", "DAYS", "CREATED");
	return store_calendar_list(s, list_one, &json, err);
}

int cli_calendar(int argc, char **argv)
{
	static const struct option own[] = {
		{"dates", required_argument, NULL, 'd'},
		{NULL, 0, NULL, 0},
	};
	const char *sub = argc > 1 ? argv[1] : "";
	char cmd[40];
	cal_args a = {0};
	bool known = !strcmp(sub, "add") || !strcmp(sub, "list") || !strcmp(sub, "show") ||
		     !strcmp(sub, "delete");
	snprintf(cmd, sizeof(cmd), "calendar%s%s", known ? " " : "", known ? sub : "");
	const cli_spec sp = {.cmd = cmd,
			     .common = CLI_COMMON_DB | CLI_COMMON_FORMAT | CLI_COMMON_HELP,
			     .own = own, .usage = calendar_usage, .formats = cli_formats_table_json,
			     .own_opt = cal_opt, .ctx = &a};
	cliopt o;
	cli_common cm;
	/* without a subcommand the options are still checked (and --help
	 * answered) before the usage error */
	int status = known ? cli_parse(&sp, &o, &cm, argc - 1, argv + 1)
			   : cli_parse(&sp, &o, &cm, argc, argv);
	if (status >= 0)
		return status;
	if (!known)
		return cli_usage_error(cmd, "expected add, list, show or delete");
	cliopt_rest_as_pos(&o);
	bool named = strcmp(sub, "list") != 0;
	if (o.npos != (named ? 1 : 0))
		return cli_usage_error(cmd, named ? "expected one calendar NAME" : "unexpected argument");
	if (!strcmp(sub, "add") && !a.dates)
		return cli_usage_error(cmd, "--dates FILE is required");
	if (strcmp(sub, "add") && a.dates)
		return cli_usage_error(cmd, "--dates is add's");
	store *s = NULL;
	if ((status = cli_open_store(cmd, &cm.db, &s)))
		return status;
	dbcron_err err = {0};
	int rc = calendar_run(sub, named ? o.pos[0] : NULL, &a,
			      cli_format_of(cm.format) == CLI_FMT_JSON, s, &err);
	if (rc)
		status = cli_fail_in(cmd, &err);
	store_close(s);
	return status;
}
