/*
 * dbcron job backfill NAME --from T1 --to T2 [--dry-run] [--max-running N]
 * [--force]: a run for every fire instant of the job's schedule in
 * [T1, T2) that has none (app/backfill.c, docs/scheduler.md "Backfill").
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/app.h"
#include "cli/cli.h"
#include "model/jobdef.h"

static void backfill_usage(FILE *f)
{
	fprintf(f,
		"usage: dbcron job backfill NAME --from TIME --to TIME [--dry-run]\n"
		"                           [--max-running N] [--force] [--format table|json]\n\n"
		"One run for every fire instant of the job's schedule (its window applied)\n"
		"in [--from, --to) that has no run yet, marked backfill in the run log.\n"
		"Each instant gets a run at most once, even when two backfills of the range\n"
		"race; the runs start now, on any node, with DBCRON_FIRE_AT and\n"
		"DBCRON_FIRE_AT_MS set to their instant.\n\n"
		"  --from TIME        the first instant (RFC 3339, epoch seconds, now, now-DUR)\n"
		"  --to TIME          the end, not included; not after now\n"
		"  --dry-run          list the instants (and which have a run); write nothing\n"
		"  --max-running N    at most N of the job's backfill runs at once, in the\n"
		"                     whole cluster (1-%d; default no cap)\n"
		"  --force            allow more than %d instants\n"
		"  --format json      {\"job\", \"from\", \"to\", \"instants\", \"created\",\n"
		"                     \"skipped\", \"dry_run\", \"paused\"} (a dry run: \"fire_at\"\n"
		"                     [{\"fire_at\", \"has_run\"}] instead of \"skipped\")\n\n"
		"Only --cron and --every jobs have instants to backfill.\n\n" CLI_DB_HELP,
		APP_BACKFILL_CAP_MAX, APP_BACKFILL_MAX);
}

static int backfill_opt(void *ctx, int c, char *arg)
{
	app_backfill_req *q = ctx;
	char *end;
	switch (c) {
	case 'f':
		q->from = arg;
		return 0;
	case 't':
		q->to = arg;
		return 0;
	case 'n':
		q->dry_run = true;
		return 0;
	case 'F':
		q->force = true;
		return 0;
	case 'm':
		errno = 0;
		long v = strtol(arg, &end, 10);
		if (!*arg || *end || errno || v < 1 || v > APP_BACKFILL_CAP_MAX)
			return cli_usage_error("job backfill",
					       "--max-running '%s': expected a whole number 1-%d",
					       arg, APP_BACKFILL_CAP_MAX);
		q->max_running = (int)v;
		return 0;
	}
	return CLI_EXIT_USAGE;
}

static void print_backfill(const char *name, const app_backfill_req *q,
			   const app_backfill_result *r)
{
	char t[64];
	if (q->dry_run) {
		size_t taken = 0;
		for (size_t i = 0; i < r->n; i++) {
			printf("%s%s\n", model_time_text(r->at[i], t, sizeof(t)),
			       r->taken && r->taken[i] ? "  (has a run)" : "");
			taken += r->taken && r->taken[i];
		}
		printf("dry run: %zu instants of job '%s', %zu without a run; nothing written\n",
		       r->n, name, r->n - taken);
		return;
	}
	printf("backfilled job '%s': %" PRId64 " runs for %zu instants (%" PRId64
	       " had a run already)%s\n",
	       name, r->created, r->n, (int64_t)r->n - r->created,
	       r->paused ? "; the job is paused: the runs wait until it is resumed" : "");
}

int cli_job_backfill(int argc, char **argv)
{
	static const struct option own[] = {
		{"from", required_argument, NULL, 'f'},
		{"to", required_argument, NULL, 't'},
		{"dry-run", no_argument, NULL, 'n'},
		{"max-running", required_argument, NULL, 'm'},
		{"force", no_argument, NULL, 'F'},
		{NULL, 0, NULL, 0},
	};
	const char *cmd = "job backfill";
	app_backfill_req q = {0};
	const cli_spec sp = {.cmd = cmd,
			     .common = CLI_COMMON_DB | CLI_COMMON_FORMAT | CLI_COMMON_HELP,
			     .own = own, .usage = backfill_usage, .formats = cli_formats_table_json,
			     .own_opt = backfill_opt, .ctx = &q};
	cliopt o;
	cli_common cm;
	int status = cli_parse(&sp, &o, &cm, argc, argv);
	if (status >= 0)
		return status;
	cliopt_rest_as_pos(&o);
	if (o.npos < 1)
		return cli_usage_error(cmd, "missing the job NAME");
	if (o.npos > 1)
		return cli_usage_error(cmd, "unexpected argument '%s'", o.pos[1]);
	if (!q.from || !q.to)
		return cli_usage_error(cmd, "--from and --to are required");
	q.name = o.pos[0];
	store *s = NULL;
	if ((status = cli_open_store(cmd, &cm.db, &s)))
		return status;
	dbcron_err err = {0};
	app_backfill_result r;
	int rc = app_job_backfill(s, &q, &r, &err);
	if (!rc && cli_format_of(cm.format) == CLI_FMT_JSON) {
		if (!cli_print_json_line(app_backfill_json(q.name, &r, q.dry_run)))
			status = cli_oom(cmd);
	} else if (!rc) {
		print_backfill(q.name, &q, &r);
	}
	if (rc)
		status = cli_fail_in(cmd, &err);
	app_backfill_result_clear(&r);
	store_close(s);
	return status;
}
