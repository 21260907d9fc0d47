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
#include <glib.h>
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
	/* "--no-inherit-env": getopt keeps the pointer, so the names live here */
	static char neg[MODEL_JK__COUNT + MODEL_JK_NALIASES][48];
	size_t n = 0;
	/* old names ("--jitter", "--no-jitter") take the key's option codes */
	for (size_t i = 0; i < MODEL_JK_NALIASES; i++) {
		const model_jobdef_alias *a = &model_jobdef_aliases[i];
		bool flag = model_jobdef_key_of(a->id)->type == MODEL_JD_BOOL;
		out[n++] = (struct option){a->name, flag ? no_argument : required_argument, NULL,
					   CLI_OPT_KEY + (int)a->id};
		if (negations && flag) {
			snprintf(neg[MODEL_JK__COUNT + i], sizeof(neg[0]), "no-%s", a->name);
			out[n++] = (struct option){neg[MODEL_JK__COUNT + i], no_argument, NULL,
						   CLI_OPT_NOKEY + (int)a->id};
		}
	}
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
	/* job trigger's --param, refused by name: without it getopt would take
	 * it as an abbreviation of --params, the declaration */
	out[n++] = (struct option){"param", required_argument, NULL, CLI_OPT_PARAM_REFUSED};
	out[n++] = (struct option){"body-file", required_argument, NULL, CLI_OPT_BODY_FILE};
	return n;
}

/* --body-file PATH: the file's text as the body key (read now: the job
 * keeps the text, the node needs no such file). */
static int body_file(struct model_jobdef *d, const char *path, dbcron_err *err)
{
	gchar *text = NULL;
	gsize len = 0;
	GError *ge = NULL;
	if (!g_file_get_contents(path, &text, &len, &ge)) {
		int rc = dbcron_err_set(err, DBCRON_EIO, "--body-file %s: %s", path,
					ge ? ge->message : "cannot read");
		g_clear_error(&ge);
		return rc;
	}
	int rc = strlen(text) != len ? dbcron_err_set(err, DBCRON_EINVAL,
						      "--body-file %s: holds a NUL byte (the body is text)",
						      path)
				     : model_jobdef_set_text(d, model_jobdef_key_of(MODEL_JK_BODY), text,
							     err);
	g_free(text);
	return rc;
}

/* --http METHOD URL: two words, kept as one key ("METHOD URL"); one word
 * with a space in it is taken as both. */
static int http_opt(struct model_jobdef *d, const char *method, dbcron_err *err)
{
	const model_jobdef_key *k = model_jobdef_key_of(MODEL_JK_HTTP);
	if (strchr(method, ' '))
		return model_jobdef_set_text(d, k, method, err);
	const char *url = cli_take_arg();
	if (!url)
		return dbcron_err_set(err, DBCRON_EINVAL, "--http: expected METHOD URL");
	size_t len = strlen(method) + strlen(url) + 2;
	char *v = g_malloc(len);
	snprintf(v, len, "%s %s", method, url);
	int rc = model_jobdef_set_text(d, k, v, err);
	g_free(v);
	return rc;
}

int cli_jobdef_opt(struct model_jobdef *d, int c, const char *arg, bool *handled,
		   dbcron_err *err)
{
	bool neg = c >= CLI_OPT_NOKEY && c < CLI_OPT_NOKEY + MODEL_JK__COUNT;
	if (c == CLI_OPT_PARAM_REFUSED) {
		*handled = true;
		return dbcron_err_set(err, DBCRON_EINVAL,
				      "unknown option '--param' (job trigger's; --params declares the "
				      "keys a trigger may give)");
	}
	if (c == CLI_OPT_BODY_FILE) {
		*handled = true;
		return body_file(d, arg, err);
	}
	if (c == CLI_OPT_KEY + MODEL_JK_HTTP) {
		*handled = true;
		return http_opt(d, arg, err);
	}
	*handled = neg || (c >= CLI_OPT_KEY && c < CLI_OPT_KEY + MODEL_JK__COUNT);
	if (!*handled)
		return DBCRON_OK;
	const model_jobdef_key *k =
		model_jobdef_key_of((model_jobdef_id)(c - (neg ? CLI_OPT_NOKEY : CLI_OPT_KEY)));
	return k->type == MODEL_JD_BOOL ? model_jobdef_set_bool(d, k, !neg, err)
					: model_jobdef_set_text(d, k, arg, err);
}

/* ------------------------------------------------------------ job set */

static void set_usage(FILE *f)
{
	fprintf(f,
		"usage: dbcron job set NAME [FLAGS...] [-- COMMAND [ARGS...]]\n\n"
		"Change the given fields of a stored job, in one transaction; the others keep\n"
		"their values.  FLAGS are those of `job add` (dbcron job add --help), checked\n"
		"the same way, plus --no-retry-jitter, --no-inherit-env, --no-on-every-node and\n"
		"--no-paused.  --paused\n"
		"and --no-paused pause and resume the job as job pause and job resume do\n"
		"(the rule for \"paused\" in docs/cli.md, the same for job apply and HTTP).\n"
		"  a schedule flag (--cron, --every, --after, --at, --needs) replaces the\n"
		"      schedule: the next fire is placed as for a new job; without one the\n"
		"      schedule and its next fire stay as they are (a fixed-rate series keeps\n"
		"      its phase)\n"
		"  --handler replaces the command (and what it runs as); -- COMMAND replaces\n"
		"      the handler or the command; --http METHOD URL replaces either (an\n"
		"      env-file stays), and either replaces the call and its HTTP options;\n"
		"      --env replaces the whole environment list\n"
		"  --no-user-check, --strict, --db URL, --db-file PATH: as for `job add`\n"
		"  --format json: one line, {\"job\", \"changed\", \"next_fire_at_ms\"}\n"
		"A field is removed by editing a `job export` file and applying it.\n"
		"A rename is `job rename OLD NEW`.\n");
}

/* job set's own options: the definition keys with their negations, and
 * two that are not part of the definition. */
#define OPT_NO_USER_CHECK 'U'
#define OPT_STRICT 'S'
_Static_assert(2 * (MODEL_JK__COUNT + MODEL_JK_NALIASES) + 3 <= CLI_MAX_LONGOPTS - 4,
	       "job set's options fit cli_parse's table");

typedef struct set_ctx {
	model_jobdef *d;
	app_job_set_opts *so;
	dbcron_err *err;
} set_ctx;

static int set_opt(void *ctx, int c, char *arg)
{
	set_ctx *sc = ctx;
	bool handled;
	if (c == OPT_NO_USER_CHECK) {
		sc->so->user_check = false;
		return 0;
	}
	if (c == OPT_STRICT) {
		sc->so->strict = true;
		return 0;
	}
	if (cli_jobdef_opt(sc->d, c, arg, &handled, sc->err))
		return cli_fail_in("job set", sc->err);
	return handled ? 0 : CLI_EXIT_USAGE;
}

static int job_set(int argc, char **argv)
{
	struct option own[2 * (MODEL_JK__COUNT + MODEL_JK_NALIASES) + 3];
	cliopt o;
	cli_common cm;
	dbcron_err err = {0};
	model_jobdef d;
	app_job_set_opts so = {.user_check = true};
	set_ctx sc = {.d = &d, .so = &so, .err = &err};
	const cli_spec sp = {.cmd = "job set",
			     .common = CLI_COMMON_DB | CLI_COMMON_FORMAT | CLI_COMMON_HELP,
			     .own = own, .usage = set_usage, .formats = cli_formats_table_json,
			     .own_opt = set_opt, .ctx = &sc};
	app_job_set_result r;
	store *s = NULL;
	int status;

	size_t n = cli_jobdef_longopts(own, true);
	own[n++] = (struct option){"no-user-check", no_argument, NULL, OPT_NO_USER_CHECK};
	own[n++] = (struct option){"strict", no_argument, NULL, OPT_STRICT};
	own[n] = (struct option){NULL, 0, NULL, 0};
	model_jobdef_init(&d, true);
	status = cli_parse(&sp, &o, &cm, argc, argv);
	if (status >= 0)
		goto out_clear;
	status = CLI_EXIT_USAGE;
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
		status = cli_fail_in("job set", &err);
		goto out_clear;
	}
	bool any = false;
	for (int i = 0; i < MODEL_JK__COUNT; i++)
		any |= d.seen[i];
	if (!any) {
		cli_usage_error("job set", "nothing to change: give at least one field");
		goto out_clear;
	}
	if ((status = cli_open_store("job set", &cm.db, &s)))
		goto out_clear;
	int rc = app_job_set(s, o.pos[0], &d, &so, &r, &err);
	if (rc) {
		/* a user or group this host lacks, not the job (as job add says) */
		if (rc == DBCRON_ENOTFOUND && (d.seen[MODEL_JK_USER] || d.seen[MODEL_JK_GROUP]) &&
		    !strstr(err.msg, "no job named"))
			fprintf(stderr, "dbcron job set: %s (if it exists only where the nodes run, "
					"add --no-user-check)\n", err.msg);
		else
			cli_fail_in("job set", &err);
		status = cli_status_for(rc);
		goto out_close;
	}
	char t[64];
	if (cli_format_of(cm.format) == CLI_FMT_JSON) {
		json_t *j = json_pack("{s:s,s:b,s:o}", "job", o.pos[0], "changed", r.changed,
				      "next_fire_at_ms",
				      r.next_fire >= 0 ? json_integer(r.next_fire) : json_null());
		if (!cli_print_json_line(j)) {
			status = cli_oom("job set");
			goto out_close;
		}
	} else if (!r.changed)
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
	fprintf(f, "usage: dbcron job rename OLD NEW [--format table|json] [--db URL | --db-file PATH]\n\n"
		   "Give a job a new name, in one transaction; NEW is checked as any job name\n"
		   "and must not be taken.  Its runs follow it: `runs --job NEW` lists them all.\n"
		   "--format json prints {\"renamed\": OLD, \"to\": NEW}.\n\n"
		   CLI_DB_HELP);
}

/* export's --format: json only, the form job apply reads (rename's is
 * table or json, checked by cli_parse). */
static int plain_opt(void *ctx, int c, char *arg)
{
	const cliopt *o = ctx;
	(void)c; /* CLI_OPT_FORMAT, the only one */
	if (strcmp(arg, "json"))
		return cli_usage_error(o->cmd, "--format '%s': expected json (the form job apply "
					       "reads)", arg);
	return 0;
}

/* Options of rename and export: --db, --db-file, --help and --format
 * (export's).  Returns -1 to go on, else an exit status. */
static int parse_plain(const char *cmd, cliopt *o, int argc, char **argv, int want_pos,
		       void (*usage)(FILE *), cli_common *cm)
{
	const cli_spec sp = {.cmd = cmd,
			     .common = CLI_COMMON_DB | CLI_COMMON_FORMAT | CLI_COMMON_HELP,
			     .usage = usage,
			     .formats = strcmp(cmd, "job export") ? cli_formats_table_json : NULL,
			     .own_opt = plain_opt, .ctx = o};
	int status = cli_parse(&sp, o, cm, argc, argv);
	if (status >= 0)
		return status;
	cliopt_rest_as_pos(o);
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
	cliopt o;
	cli_common cm;
	int status = parse_plain("job rename", &o, argc, argv, 2, rename_usage, &cm);
	if (status >= 0)
		return status;
	store *s = NULL;
	if ((status = cli_open_store("job rename", &cm.db, &s)))
		return status;
	dbcron_err err = {0};
	int rc = app_job_rename(s, o.pos[0], o.pos[1], &err);
	if (!rc && cli_format_of(cm.format) == CLI_FMT_JSON) {
		if (!cli_print_json_line(json_pack("{s:s,s:s}", "renamed", o.pos[0], "to", o.pos[1])))
			status = cli_oom("job rename");
	} else if (!rc)
		printf("renamed job '%s' to '%s'\n", o.pos[0], o.pos[1]);
	else
		status = cli_fail_in("job rename", &err);
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
	cliopt o;
	cli_common cm;
	int status = parse_plain("job export", &o, argc, argv, 0, export_usage, &cm);
	if (status >= 0)
		return status;
	store *s = NULL;
	if ((status = cli_open_store("job export", &cm.db, &s)))
		return status;
	dbcron_err err = {0};
	json_t *arr = NULL;
	if (app_jobs_export(s, &arr, &err)) {
		status = cli_fail_in("job export", &err);
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
