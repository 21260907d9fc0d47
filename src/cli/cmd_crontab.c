/*
 * dbcron job import-crontab: reads a crontab (a file or stdin), prints
 * its entries as a `job apply` file or applies them.  The reading of
 * crontab(5) is model/crontab.c; this file owns the options, the input
 * buffer and the printing.  Invariant kept: every refused line is printed
 * as FILE:LINE, and --apply writes nothing while any line is refused
 * unless --partial says the others may go in alone.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/alloc.h"
#include "model/crontab.h"

/* No crontab is this long; a larger input is a mistake, not a crontab. */
#define CRONTAB_MAX_BYTES (16u << 20)

static void usage(FILE *f)
{
	fprintf(f,
		"usage: dbcron job import-crontab FILE|- [--system] [--user NAME]\n"
		"                                 [--apply [--partial] [--no-user-check]]\n"
		"                                 [--db URL | --db-file PATH]\n\n"
		"Read a crontab (FILE - is stdin) and print its entries as a `job apply` file\n"
		"(a JSON array), or apply them.  Each entry becomes a job named\n"
		"crontab-WORD-HASH from its line (the same line gives the same name in every\n"
		"run) with cron's behaviour: runs may overlap, a missed time is skipped, no\n"
		"retries.  VAR=value lines set the environment of the entries below them\n"
		"(PATH is /usr/bin:/bin unless set, SHELL runs the command, HOME is its working\n"
		"directory, CRON_TZ its time zone); @hourly ... @yearly are kept; in a command\n"
		"the first %% not written \\%% ends it and the rest is its stdin, as cron(8) does.\n"
		"Lines that cannot be expressed (@reboot, MAILTO=someone, a bad field) are\n"
		"reported as FILE:LINE and the others go on; the exit status is then 2.\n"
		"  --system         the system format (/etc/crontab, /etc/cron.d): a user column\n"
		"                   after the time fields, the job's user\n"
		"  --user NAME      every job runs as NAME (a user's crontab)\n"
		"  --apply          apply the jobs (job apply) instead of printing them; nothing\n"
		"                   is applied while any line is refused ...\n"
		"  --partial        ... unless --partial: then the others are\n"
		"  --no-user-check  do not look the users up on this host (--apply)\n" CLI_DB_HELP);
}

typedef struct report_ctx {
	const char *shown;
	size_t n;
} report_ctx;

static void report(void *ctx, size_t line, const char *msg)
{
	report_ctx *r = ctx;
	r->n++;
	fprintf(stderr, "dbcron job import-crontab: %s:%zu: %s\n", r->shown, line, msg);
}

/* All of f, at most CRONTAB_MAX_BYTES; NULL after printing why. */
static char *read_all(FILE *f, const char *shown, size_t *len)
{
	size_t cap = 8192, n = 0;
	char *buf = dbcron__malloc(cap);
	if (!buf)
		goto out_nomem;
	for (;;) {
		if (n == cap) {
			if (cap > CRONTAB_MAX_BYTES) {
				fprintf(stderr, "dbcron job import-crontab: %s: larger than %u MiB, "
						"not a crontab\n", shown, CRONTAB_MAX_BYTES >> 20);
				dbcron__free(buf);
				return NULL;
			}
			char *b = dbcron__realloc(buf, cap * 2);
			if (!b)
				goto out_nomem;
			buf = b;
			cap *= 2;
		}
		size_t got = fread(buf + n, 1, cap - n, f);
		n += got;
		if (got == 0)
			break;
	}
	if (ferror(f)) {
		fprintf(stderr, "dbcron job import-crontab: %s: %s\n", shown, strerror(errno));
		dbcron__free(buf);
		return NULL;
	}
	*len = n;
	return buf;
out_nomem:
	dbcron__free(buf);
	fprintf(stderr, "dbcron job import-crontab: out of memory\n");
	return NULL;
}

/* import-crontab's own options. */
typedef struct import_args {
	model_crontab_opts mo;
	bool apply, partial, user_check;
} import_args;

static int import_opt(void *ctx, int c, char *arg)
{
	import_args *a = ctx;
	switch (c) {
	case 's':
		a->mo.system = true;
		break;
	case 'u':
		a->mo.user = arg;
		break;
	case 'a':
		a->apply = true;
		break;
	case 'p':
		a->partial = true;
		break;
	default: /* 'U' */
		a->user_check = false;
		break;
	}
	return 0;
}

int cli_job_import_crontab(int argc, char **argv)
{
	static const struct option own[] = {
		{"system", no_argument, NULL, 's'},
		{"user", required_argument, NULL, 'u'},
		{"apply", no_argument, NULL, 'a'},
		{"partial", no_argument, NULL, 'p'},
		{"no-user-check", no_argument, NULL, 'U'},
		{NULL, 0, NULL, 0},
	};
	const char *cmd = "job import-crontab";
	import_args ia = {.user_check = true};
	const cli_spec sp = {.cmd = cmd, .common = CLI_COMMON_DB | CLI_COMMON_HELP, .own = own,
			     .usage = usage, .own_opt = import_opt, .ctx = &ia};
	model_crontab_opts *mo = &ia.mo;
	cliopt o;
	cli_common cm;

	int st = cli_parse(&sp, &o, &cm, argc, argv);
	if (st >= 0)
		return st;
	cliopt_rest_as_pos(&o);
	if (o.npos < 1)
		return cli_usage_error(cmd, "missing the FILE (- for stdin)");
	if (o.npos > 1)
		return cli_usage_error(cmd, "unexpected argument '%s'", o.pos[1]);
	if (mo->system && mo->user)
		return cli_usage_error(cmd, "--user is for a user's crontab; the system format "
					    "names the user on each line");
	if (ia.partial && !ia.apply)
		return cli_usage_error(cmd, "--partial goes with --apply");
	if (!ia.user_check && !ia.apply)
		return cli_usage_error(cmd, "--no-user-check goes with --apply");

	const char *path = o.pos[0];
	report_ctx rc = {.shown = strcmp(path, "-") ? path : "<stdin>"};
	FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
	if (!f) {
		fprintf(stderr, "dbcron %s: %s: %s\n", cmd, path, strerror(errno));
		return CLI_EXIT_USAGE;
	}
	size_t len = 0;
	char *text = read_all(f, rc.shown, &len);
	if (f != stdin)
		fclose(f);
	if (!text)
		return CLI_EXIT_FAIL;

	json_t *jobs = NULL;
	size_t refused = 0;
	dbcron_err err = {0};
	int status = CLI_EXIT_FAIL;
	if (model_crontab_parse(text, len, mo, &jobs, &refused, report, &rc, &err)) {
		status = cli_fail(&err);
		goto out;
	}
	size_t n = json_array_size(jobs);
	if (refused)
		fprintf(stderr, "dbcron %s: %s: %zu job%s, %zu line%s refused\n", cmd, rc.shown, n,
			n == 1 ? "" : "s", refused, refused == 1 ? "" : "s");
	if (!ia.apply) {
		if (json_dumpf(jobs, stdout, JSON_INDENT(2)) || fputc('\n', stdout) == EOF ||
		    fflush(stdout)) {
			fprintf(stderr, "dbcron %s: writing the output: %s\n", cmd, strerror(errno));
			goto out;
		}
		status = refused ? CLI_EXIT_USAGE : CLI_EXIT_OK;
		goto out;
	}
	if (refused && !ia.partial) {
		fprintf(stderr, "dbcron %s: %s: nothing applied (fix the lines above, or --partial "
				"to apply the %zu others)\n", cmd, rc.shown, n);
		status = CLI_EXIT_USAGE;
		goto out;
	}
	status = cli_apply_jobs(rc.shown, jobs, &cm.db, ia.user_check, false, false, false);
	jobs = NULL;
	if (status == CLI_EXIT_OK && refused)
		status = CLI_EXIT_USAGE;
out:
	json_decref(jobs);
	dbcron__free(text);
	return status;
}
