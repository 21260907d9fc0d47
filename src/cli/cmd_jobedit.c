/*
 * `dbcron job set`, `job rename` and `job export`: editing stored jobs in
 * place and writing them out as a `job apply` file.  Owns the long options
 * of the definition keys (the same table `job add` parses, so the two take
 * the same flags).  Keeps the CLI's promise on bad input: the flags are
 * parsed and checked before the database is opened, and each verb is one
 * app/ call that writes in one transaction or not at all.  What a change
 * means (which fields stay, where the next fire goes) is the app layer's;
 * this file parses argv and prints.
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "app/app.h"
#include "cli/cli.h"
#include "model/jobdef.h"
#include "model/json.h"

/* ------------------------------------------------ the definition flags */

size_t cli_jobdef_longopts(struct option *out, bool negations)
{
	/* "--no-jitter": getopt keeps the pointer, so the names live here */
	static char neg[MODEL_JK__COUNT][48];
	size_t n = 0;
	for (const model_jobdef_key *k = model_jobdef_keys; k->name; k++) {
		if (k->type == MODEL_JD_ARGV || k->id == MODEL_JK_NAME)
			continue;
		out[n++] = (struct option){k->name,
					   k->type == MODEL_JD_BOOL ? no_argument : required_argument,
					   NULL, CLI_OPT_KEY + (int)k->id};
		if (negations && k->type == MODEL_JD_BOOL) {
			snprintf(neg[k->id], sizeof(neg[k->id]), "no-%s", k->name);
			out[n++] = (struct option){neg[k->id], no_argument, NULL,
						   CLI_OPT_NOKEY + (int)k->id};
		}
	}
	return n;
}

int cli_jobdef_opt(struct model_jobdef *d, int c, const char *arg, bool *handled,
		   dbcron_err *err)
{
	bool neg = c >= CLI_OPT_NOKEY && c < CLI_OPT_NOKEY + MODEL_JK__COUNT;
	*handled = neg || (c >= CLI_OPT_KEY && c < CLI_OPT_KEY + MODEL_JK__COUNT);
	if (!*handled)
		return DBCRON_OK;
	const model_jobdef_key *k =
		model_jobdef_key_of((model_jobdef_id)(c - (neg ? CLI_OPT_NOKEY : CLI_OPT_KEY)));
	return k->type == MODEL_JD_BOOL ? model_jobdef_set_bool(d, k, !neg, err)
					: model_jobdef_set_text(d, k, arg, err);
}

static int fail_in(const char *cmd, const dbcron_err *err)
{
	fprintf(stderr, "dbcron %s: %s\n", cmd,
		err->msg[0] ? err->msg : dbcron_strerror(err->code));
	return cli_status_for(err->code);
}

/* ------------------------------------------------------------ job set */

static void set_usage(FILE *f)
{
	fprintf(f,
		"usage: dbcron job set NAME [FLAGS...] [-- COMMAND [ARGS...]]\n\n"
		"Change the given fields of a stored job, in one transaction; the others keep\n"
		"their values.  FLAGS are those of `job add` (dbcron job add --help), checked\n"
		"the same way, plus --no-jitter, --no-inherit-env and --no-paused.  --paused\n"
		"and --no-paused pause and resume the job as job pause and job resume do\n"
		"(the rule for \"paused\" in docs/cli.md, the same for job apply and HTTP).\n"
		"  a schedule flag (--cron, --every, --after, --at) replaces the schedule: the\n"
		"      next fire is placed as for a new job; without one the schedule and its\n"
		"      next fire stay as they are (a fixed-rate series keeps its phase)\n"
		"  --handler replaces the command (and what it runs as); -- COMMAND replaces\n"
		"      the handler or the command; --env replaces the whole environment list\n"
		"  --no-user-check, --strict, --db URL, --db-file PATH: as for `job add`\n"
		"A field is removed by editing a `job export` file and applying it.\n"
		"A rename is `job rename OLD NEW`.\n");
}

#define OPT_DB 1000
#define OPT_DB_FILE 1001
#define OPT_NO_USER_CHECK 1002
#define OPT_STRICT 1003

static int job_set(int argc, char **argv)
{
	struct option longs[2 * MODEL_JK__COUNT + 6];
	cliopt o = {.cmd = "job set"};
	cli_db db = {0};
	dbcron_err err = {0};
	model_jobdef d;
	app_job_set_opts so = {.user_check = true};
	app_job_set_result r;
	store *s = NULL;
	int c, status = CLI_EXIT_USAGE;

	size_t n = cli_jobdef_longopts(longs, true);
	longs[n++] = (struct option){"db", required_argument, NULL, OPT_DB};
	longs[n++] = (struct option){"db-file", required_argument, NULL, OPT_DB_FILE};
	longs[n++] = (struct option){"no-user-check", no_argument, NULL, OPT_NO_USER_CHECK};
	longs[n++] = (struct option){"strict", no_argument, NULL, OPT_STRICT};
	longs[n++] = (struct option){"help", no_argument, NULL, 'h'};
	longs[n] = (struct option){NULL, 0, NULL, 0};
	model_jobdef_init(&d, true);
	cliopt_reset();
	while ((c = cliopt_next(&o, argc, argv, "+:h", longs)) != -1) {
		bool handled;
		if (c == 'h') {
			set_usage(stdout);
			status = CLI_EXIT_OK;
			goto out_clear;
		} else if (c == OPT_DB) {
			cli_db_set_url(&db, optarg);
		} else if (c == OPT_DB_FILE) {
			db.file = optarg;
		} else if (c == OPT_NO_USER_CHECK) {
			so.user_check = false;
		} else if (c == OPT_STRICT) {
			so.strict = true;
		} else if (cli_jobdef_opt(&d, c, optarg, &handled, &err)) {
			status = fail_in("job set", &err);
			goto out_clear;
		} else if (!handled) {
			goto out_clear;
		}
	}
	if (o.npos == 0) {
		cli_usage_error("job set", "missing the job NAME");
		goto out_clear;
	}
	if (o.npos > 1) {
		cli_usage_error("job set", "unexpected argument '%s' (a command goes after --)",
				o.pos[1]);
		goto out_clear;
	}
	if (o.dashdash && model_jobdef_set_argv(&d, o.rest, o.nrest, &err)) {
		status = fail_in("job set", &err);
		goto out_clear;
	}
	bool any = false;
	for (int i = 0; i < MODEL_JK__COUNT; i++)
		any |= d.seen[i];
	if (!any) {
		cli_usage_error("job set", "nothing to change: give at least one field");
		goto out_clear;
	}
	if ((status = cli_open_store("job set", &db, &s)))
		goto out_clear;
	int rc = app_job_set(s, o.pos[0], &d, &so, &r, &err);
	if (rc) {
		/* a user or group this host lacks, not the job (as job add says) */
		if (rc == DBCRON_ENOTFOUND && (d.seen[MODEL_JK_USER] || d.seen[MODEL_JK_GROUP]) &&
		    !strstr(err.msg, "no job named"))
			fprintf(stderr, "dbcron job set: %s (if it exists only where the nodes run, "
					"add --no-user-check)\n", err.msg);
		else
			fail_in("job set", &err);
		status = cli_status_for(rc);
		goto out_close;
	}
	char t[64];
	if (!r.changed)
		printf("job '%s' unchanged (the fields given were as stored)\n", o.pos[0]);
	else
		printf("changed job '%s', next fire %s\n", o.pos[0],
		       model_time_text(r.next_fire, t, sizeof(t)));
	if (r.warning[0])
		fprintf(stderr, "dbcron job set: warning: %s\n", r.warning);
	status = CLI_EXIT_OK;
out_close:
	store_close(s);
out_clear:
	model_jobdef_clear(&d);
	return status;
}

/* --------------------------------------------------------- job rename */

static void rename_usage(FILE *f)
{
	fprintf(f, "usage: dbcron job rename OLD NEW [--db URL | --db-file PATH]\n\n"
		   "Give a job a new name, in one transaction; NEW is checked as any job name\n"
		   "and must not be taken.  Its runs follow it: `runs --job NEW` lists them all.\n\n"
		   CLI_DB_HELP);
}

/* Options of rename and export: --db, --db-file, --help, and for export
 * --format json.  Returns -1 to go on, else an exit status. */
static int parse_plain(cliopt *o, int argc, char **argv, int want_pos, bool format,
		       void (*usage)(FILE *), cli_db *db)
{
	static const struct option longs[] = {
		{"db", required_argument, NULL, 'd'},
		{"db-file", required_argument, NULL, 'F'},
		{"format", required_argument, NULL, 'f'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c;
	cliopt_reset();
	while ((c = cliopt_next(o, argc, argv, "+:h", longs)) != -1) {
		switch (c) {
		case 'd':
			cli_db_set_url(db, optarg);
			break;
		case 'F':
			db->file = optarg;
			break;
		case 'f':
			if (!format)
				return cli_usage_error(o->cmd, "unknown option '--format'");
			if (strcmp(optarg, "json"))
				return cli_usage_error(o->cmd, "--format '%s': expected json (the "
							       "form job apply reads)", optarg);
			break;
		case 'h':
			usage(stdout);
			return CLI_EXIT_OK;
		default:
			return CLI_EXIT_USAGE;
		}
	}
	for (int i = 0; o->dashdash && i < o->nrest; i++, o->npos++)
		if (o->npos < CLIOPT_MAXPOS)
			o->pos[o->npos] = o->rest[i];
	if (o->npos < want_pos)
		return cli_usage_error(o->cmd, want_pos == 2 && o->npos == 1
						       ? "missing the NEW name"
						       : "missing the job NAME");
	if (o->npos > want_pos)
		return cli_usage_error(o->cmd, "unexpected argument '%s'", o->pos[want_pos]);
	return -1;
}

static int job_rename(int argc, char **argv)
{
	cliopt o = {.cmd = "job rename"};
	cli_db db = {0};
	int status = parse_plain(&o, argc, argv, 2, false, rename_usage, &db);
	if (status >= 0)
		return status;
	store *s = NULL;
	if ((status = cli_open_store("job rename", &db, &s)))
		return status;
	dbcron_err err = {0};
	int rc = app_job_rename(s, o.pos[0], o.pos[1], &err);
	if (!rc)
		printf("renamed job '%s' to '%s'\n", o.pos[0], o.pos[1]);
	else
		status = fail_in("job rename", &err);
	store_close(s);
	return status;
}

/* --------------------------------------------------------- job export */

static void export_usage(FILE *f)
{
	fprintf(f, "usage: dbcron job export [--format json] [--db URL | --db-file PATH]\n\n"
		   "Every job as a `job apply` file on stdout: a JSON array sorted by name, one\n"
		   "job a line, each with every key apply reads and none it ignores (no ids, no\n"
		   "next fire); a one-shot's \"at\" is its instant in RFC 3339 (UTC).  Applying\n"
		   "the file to another database makes the same jobs; applying it to this one\n"
		   "changes nothing.\n\n" CLI_DB_HELP);
}

static int job_export(int argc, char **argv)
{
	cliopt o = {.cmd = "job export"};
	cli_db db = {0};
	int status = parse_plain(&o, argc, argv, 0, true, export_usage, &db);
	if (status >= 0)
		return status;
	store *s = NULL;
	if ((status = cli_open_store("job export", &db, &s)))
		return status;
	dbcron_err err = {0};
	json_t *arr = NULL;
	if (app_jobs_export(s, &arr, &err)) {
		status = fail_in("job export", &err);
		goto out_close;
	}
	fputc('[', stdout);
	for (size_t i = 0; i < json_array_size(arr); i++) {
		fputs(i ? ",\n" : "\n", stdout);
		if (json_dumpf(json_array_get(arr, i), stdout, JSON_COMPACT | JSON_ENSURE_ASCII)) {
			fprintf(stderr, "dbcron job export: out of memory\n");
			status = CLI_EXIT_FAIL;
			goto out_close;
		}
	}
	fputs(json_array_size(arr) ? "\n]\n" : "]\n", stdout);
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "dbcron job export: writing output: %s\n", strerror(errno));
		status = CLI_EXIT_FAIL;
	}
out_close:
	json_decref(arr);
	store_close(s);
	return status;
}

/* ----------------------------------------------------------- dispatch */

int cli_job_edit(const char *sub, int argc, char **argv)
{
	if (!strcmp(sub, "set"))
		return job_set(argc, argv);
	if (!strcmp(sub, "rename"))
		return job_rename(argc, argv);
	if (!strcmp(sub, "export"))
		return job_export(argc, argv);
	return -1;
}
