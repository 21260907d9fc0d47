/*
 * `dbcron job ...`: the job definitions (job apply is cmd_apply.c's, job
 * set, rename and export cmd_jobedit.c's, import-crontab cmd_crontab.c's).
 * Keeps the CLI's promise on bad input: every definition is parsed and
 * validated in full before the store is written, and a write is one
 * store call (one transaction), so a rejected command leaves the database
 * as it was.  Times the user gives relative to "now" are the database's
 * now (app_now_ms), never this host's clock.  What a definition means,
 * how a job reads as JSON and where a resumed job fires next are the
 * model's (src/model/); this file parses argv and prints.
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/app.h"
#include "cli/cli.h"
#include "core/alloc.h"
#include "core/sort.h"
#include "core/timeutil.h"
#include "cron/spread.h"
#include "model/params.h"
#include "model/jobdef.h"
#include "model/json.h"
#include "model/target.h"
#include "model/rules.h"

static int no_such_job(const char *cmd, const char *name)
{
	fprintf(stderr, "dbcron %s: no job named '%s'\n", cmd, name);
	return CLI_EXIT_USAGE;
}

/* ------------------------------------------------------------ job add */

static void add_usage(FILE *f)
{
	fprintf(f,
		"usage: dbcron job add NAME SCHEDULE [OPTIONS] (-- COMMAND [ARGS...] | --handler NAME [--arg TEXT]\n"
		"                      | --http METHOD URL [HTTP OPTIONS]\n"
		"                      | --sql STATEMENT [--sql-db-file PATH])\n\n"
		"SCHEDULE, exactly one of:\n"
		"  --cron EXPR             Quartz (6/7 fields) or Unix (5 fields) cron\n"
		"  --every DUR             fixed rate; first fire one interval from now\n"
		"  --after DUR             fixed delay after the previous run ends\n"
		"  --at TIME               once: RFC 3339, epoch seconds, now, now+DUR\n"
		"  --needs JOBS            no schedule of its own: fires once each time every\n"
		"                          job of JOBS (a,b; repeatable) has succeeded since\n"
		"                          its previous fire\n"
		"OPTIONS:\n");
	model_jobdef_help(f, MODEL_SCOPE_ANY);
	fprintf(f, "A COMMAND RUNS AS (docs/security.md):\n");
	model_jobdef_help(f, MODEL_SCOPE_RUNAS);
	fprintf(f, "HTTP OPTIONS (docs/exec.md; --timeout bounds the whole request, --env-file\n"
		   "holds the values of ${NAME} placeholders):\n");
	model_jobdef_help(f, MODEL_SCOPE_HTTP);
	fprintf(f, "A SQL JOB (docs/exec.md):\n");
	model_jobdef_help(f, MODEL_SCOPE_SQL);
	fprintf(f,
		"  --no-user-check         do not look the user and group up, nor read the\n"
		"                          --sql-db-file, on this host (they exist only where\n"
		"                          the nodes run)\n"
		"  --strict                refuse a --handler that is not built in (by default it\n"
		"                          is added with a warning: programs that embed a node\n"
		"                          register their own, and only their nodes run the job)\n"
		"  --format json           print {\"added\", \"next_fire_at_ms\", \"paused\"} on one line\n"
		"  --db URL                database (default $DBCRON_DB, else sqlite:./dbcron.db)\n"
		"  --db-file PATH          read the database URL from PATH (default $DBCRON_DB_FILE)\n"
		"DUR: 500ms, 30s, 5m, 2h, 1d, or compound 1h30m.  Times relative to now use the\n"
		"database's clock.\n");
}

/* job add's own options: one per key of the table (cli_jobdef_longopts),
 * and two that are not part of the definition. */
#define OPT_NO_USER_CHECK 'U'
#define OPT_STRICT 'S'

static void add_options(struct option *out)
{
	size_t n = cli_jobdef_longopts(out, false);
	out[n++] = (struct option){"no-user-check", no_argument, NULL, OPT_NO_USER_CHECK};
	out[n++] = (struct option){"strict", no_argument, NULL, OPT_STRICT};
	out[n] = (struct option){NULL, 0, NULL, 0};
}

typedef struct add_ctx {
	model_jobdef *d;
	bool user_check, strict;
	dbcron_err *err;
} add_ctx;

static int add_opt(void *ctx, int c, char *arg)
{
	add_ctx *ac = ctx;
	bool handled;
	if (c == OPT_NO_USER_CHECK) {
		ac->user_check = false;
		return 0;
	}
	if (c == OPT_STRICT) {
		ac->strict = true;
		return 0;
	}
	if (cli_jobdef_opt(ac->d, c, arg, &handled, ac->err))
		return cli_fail_in("job add", ac->err);
	return handled ? 0 : CLI_EXIT_USAGE;
}

static int job_add(int argc, char **argv)
{
	struct option own[MODEL_JK__COUNT + MODEL_JK_NALIASES + 3];
	cliopt o;
	cli_common cm;
	dbcron_err err = {0};
	model_jobdef d;
	add_ctx ac = {.d = &d, .user_check = true, .err = &err};
	const cli_spec sp = {.cmd = "job add",
			     .common = CLI_COMMON_DB | CLI_COMMON_FORMAT | CLI_COMMON_HELP,
			     .own = own, .usage = add_usage, .formats = cli_formats_table_json,
			     .own_opt = add_opt, .ctx = &ac};
	char warn[512] = "";
	int status;

	add_options(own);
	model_jobdef_init(&d, true);
	status = cli_parse(&sp, &o, &cm, argc, argv);
	if (status >= 0)
		goto out_clear;
	status = CLI_EXIT_USAGE;
	if (o.npos == 0) {
		cli_usage_error("job add", "missing the job NAME");
		goto out_clear;
	}
	if (o.npos > 1) {
		cli_usage_error("job add", "unexpected argument '%s' (a command goes after --)",
				o.pos[1]);
		goto out_clear;
	}
	if (model_jobdef_set_text(&d, model_jobdef_key_of(MODEL_JK_NAME), o.pos[0], &err) ||
	    (o.dashdash && model_jobdef_set_argv(&d, o.rest, o.nrest, &err)) ||
	    model_jobdef_check(&d, &err) || (ac.user_check && model_jobdef_check_host(&d, &err)) ||
	    model_jobdef_check_handler(&d.job, ac.strict, warn, sizeof(warn), &err)) {
		if (err.code == DBCRON_ENOTFOUND) {
			fprintf(stderr, "dbcron job add: %s (if it exists only where the nodes run, "
					"add --no-user-check)\n", err.msg);
			status = CLI_EXIT_USAGE;
		} else {
			status = cli_fail_in("job add", &err);
		}
		goto out_clear;
	}

	store *s = NULL;
	status = cli_open_store("job add", &cm.db, &s);
	if (status)
		goto out_clear;
	int rc = app_job_add(s, &d, &err);
	if (rc == DBCRON_EEXISTS) {
		fprintf(stderr, "dbcron job add: job '%s' already exists (delete it first, or use job apply to update)\n",
			d.job.name);
		status = CLI_EXIT_USAGE;
		goto out_close;
	}
	if (rc) {
		status = cli_fail_in("job add", &err);
		goto out_close;
	}
	char t[64];
	if (cli_format_of(cm.format) == CLI_FMT_JSON) {
		json_t *j = json_pack("{s:s,s:o,s:b}", "added", d.job.name, "next_fire_at_ms",
				      d.job.next_fire_at >= 0 ? json_integer(d.job.next_fire_at)
							      : json_null(),
				      "paused", d.job.paused);
		if (!cli_print_json_line(j)) {
			status = cli_oom("job add");
			goto out_close;
		}
	} else if (d.job.next_fire_at >= 0)
		printf("added job '%s', next fire %s%s\n", d.job.name,
		       model_time_text(d.job.next_fire_at, t, sizeof(t)),
		       d.job.paused ? " (paused)" : "");
	else
		printf("added job '%s', %s\n", d.job.name,
		       d.job.kind == DBCRON_SCHED_NEEDS ? "fires when its needs have succeeded"
							: "no future fire");
	if (d.job.next_fire_at < 0 && d.job.kind != DBCRON_SCHED_NEEDS)
		fprintf(stderr, "dbcron job add: warning: '%s' never fires after now (%s); only job trigger runs it\n",
			d.job.name, d.job.spec);
	if (warn[0])
		fprintf(stderr, "dbcron job add: warning: %s\n", warn);
	status = CLI_EXIT_OK;
out_close:
	store_close(s);
out_clear:
	model_jobdef_clear(&d);
	return status;
}

/* ------------------------------------------------- list, show and co */

/* What job list, show and the verbs by name take: the shared options and
 * a NAME. */
typedef struct simple_args {
	cli_common cm;
	const char *cmd;
	const char *name;
	bool force; /* job delete --force */
	/* job trigger --param KEY=VALUE, in order; one more than the model
	 * takes, so that too many is its refusal, said once */
	const char *params[MODEL_PARAM_MAX + 1];
	size_t nparams;
} simple_args;

/* job apply's options (cli_apply_longopts) are in the table of the other
 * job subcommands too, each refused by name: one table gave them to every
 * subcommand once, and so "job list --prune" or "--max-bytes=1" still say
 * "unknown option '--prune'", and the abbreviations stay as they were. */
static int simple_opt(void *ctx, int c, char *arg)
{
	simple_args *a = ctx;
	(void)arg;
	if (c == 'F' && strcmp(a->cmd, "job delete") == 0) {
		a->force = true;
		return 0;
	}
	if (c == 'Q' && strcmp(a->cmd, "job trigger") == 0) {
		if (a->nparams > MODEL_PARAM_MAX)
			return cli_usage_error(a->cmd, "--param: more than %d parameters",
					       MODEL_PARAM_MAX);
		a->params[a->nparams++] = arg;
		return 0;
	}
	if (c == CLI_OPT_FORMAT)
		return cli_usage_error(a->cmd, "unknown option '--format'");
	for (const struct option *l = cli_apply_longopts; l->name; l++)
		if (l->val == c)
			return cli_usage_error(a->cmd, "unknown option '--%s'", l->name);
	return CLI_EXIT_USAGE;
}

/* formats: --format table|json is taken.  Returns -1 to go on, else an
 * exit status. */
static int parse_simple(const char *cmd, int argc, char **argv, int want_pos,
			bool formats, void (*usage)(FILE *), simple_args *a)
{
	const cli_spec sp = {.cmd = cmd,
			     .common = CLI_COMMON_DB | CLI_COMMON_FORMAT | CLI_COMMON_HELP,
			     .own = cli_apply_longopts, .usage = usage,
			     .formats = formats ? cli_formats_table_json : NULL, .own_opt = simple_opt,
			     .ctx = a};
	cliopt o;

	a->cmd = cmd;
	a->name = NULL;
	a->force = false;
	a->nparams = 0;
	int status = cli_parse(&sp, &o, &a->cm, argc, argv);
	if (status >= 0)
		return status;
	/* "--" before a name that starts with "-" */
	cliopt_rest_as_pos(&o);
	if (o.npos < want_pos)
		return cli_usage_error(cmd, "missing the job NAME");
	if (o.npos > want_pos)
		return cli_usage_error(cmd, "unexpected argument '%s'", o.pos[want_pos]);
	if (want_pos)
		a->name = o.pos[0];
	return -1;
}

/* Print a JSON value on one line; false on failure (OOM, EPIPE). */
static bool print_json(json_t *v)
{
	if (!v)
		return false;
	int rc = json_dumpf(v, stdout, JSON_COMPACT | JSON_ENSURE_ASCII);
	json_decref(v);
	return rc == 0;
}

/* One shell word, quoted only when it needs to be. */
static void print_word(FILE *f, const char *w)
{
	if (*w && strspn(w, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
			    "0123456789_./=:,+@%-") == strlen(w)) {
		fputs(w, f);
		return;
	}
	fputc('\'', f);
	for (const char *p = w; *p; p++) {
		if (*p == '\'')
			fputs("'\\''", f);
		else
			fputc(*p, f);
	}
	fputc('\'', f);
}

static void list_usage(FILE *f)
{
	fprintf(f, "usage: dbcron job list [--format table|json] [--db URL | --db-file PATH]\n\n"
		   "All jobs by name: schedule, zone, paused, next fire (in the job's zone and\n"
		   "from now), the last run's state and when it ended, and what it runs.\n"
		   "\"Now\" is the database's clock.  --format json: one job a line, as\n"
		   "GET /api/v1/jobs gives them (docs/http.md).\n\n" CLI_DB_HELP);
}

/* "in 4m", "3h ago", "now": ms against now, in its largest whole unit
 * (up to 2 h in minutes, up to 2 days in hours). */
static const char *relative_text(int64_t ms, int64_t now, char *buf, size_t len)
{
	static const struct {
		int64_t from, per;
		char unit;
	} units[] = {{2 * 86400, 86400, 'd'}, {2 * 3600, 3600, 'h'}, {60, 60, 'm'}, {1, 1, 's'}};
	int64_t d = ms - now, a = (d < 0 ? -d : d) / 1000;
	size_t u = 0;
	if (a == 0) {
		snprintf(buf, len, "now");
		return buf;
	}
	while (a < units[u].from)
		u++;
	snprintf(buf, len, "%s%" PRId64 "%c%s", d > 0 ? "in " : "", a / units[u].per,
		 units[u].unit, d > 0 ? "" : " ago");
	return buf;
}

static const char *jstr(const json_t *o, const char *key)
{
	const char *v = json_string_value(json_object_get(o, key));
	return v ? v : "";
}

/* What a listed job runs: "handler NAME", "http METHOD URL", "sql
 * STATEMENT" or its command as shell words. */
static char *command_text(const json_t *job)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	const json_t *cmd = json_object_get(job, "command");
	if (json_is_array(cmd)) {
		for (size_t i = 0; i < json_array_size(cmd); i++) {
			if (i)
				fputc(' ', f);
			const char *w = json_string_value(json_array_get(cmd, i));
			print_word(f, w ? w : "");
		}
	} else if (json_is_string(json_object_get(job, "http"))) {
		fprintf(f, "http %s", jstr(job, "http"));
	} else if (json_is_string(json_object_get(job, "sql"))) {
		/* one line of the table: a statement's line breaks as spaces */
		fputs("sql ", f);
		for (const char *p = jstr(job, "sql"); *p; p++)
			fputc(*p == '\n' || *p == '\r' || *p == '\t' ? ' ' : *p, f);
	} else {
		fprintf(f, "handler %s", jstr(job, "handler"));
	}
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* One row of the table, each cell its own text. */
typedef struct list_row {
	const char *name, *sched, *tz, *paused, *unrunnable;
	char next[160], last[96];
	char *cmd; /* open_memstream's: free() */
} list_row;

static void list_row_fill(list_row *r, const json_t *job, int64_t now)
{
	char rel[48];
	r->name = jstr(job, "name");
	r->sched = jstr(job, "schedule");
	r->tz = jstr(job, "tz");
	r->paused = json_is_true(json_object_get(job, "paused")) ? "yes" : "no";
	r->unrunnable = json_string_value(json_object_get(job, "unrunnable"));
	const json_t *nf = json_object_get(job, "next_fire_at_ms");
	if (json_object_get(job, "set_aside"))
		snprintf(r->next, sizeof(r->next), "set aside (see job show)");
	else if (json_is_integer(nf))
		snprintf(r->next, sizeof(r->next), "%s (%s)", jstr(job, "next_fire_local"),
			 relative_text(json_integer_value(nf), now, rel, sizeof(rel)));
	else
		snprintf(r->next, sizeof(r->next), "-");
	const json_t *lr = json_object_get(job, "last_run");
	const json_t *fin = json_object_get(lr, "finished_at_ms");
	if (!json_is_object(lr))
		snprintf(r->last, sizeof(r->last), "-");
	else if (json_is_integer(fin))
		snprintf(r->last, sizeof(r->last), "%s %s", jstr(lr, "state"),
			 relative_text(json_integer_value(fin), now, rel, sizeof(rel)));
	else
		snprintf(r->last, sizeof(r->last), "%s", jstr(lr, "state"));
	r->cmd = command_text(job);
}

static int width(int w, const char *s)
{
	int l = (int)strlen(s);
	return l > w ? l : w;
}

/* The listing as a table: every page first, for the column widths. */
static bool print_list_table(const json_t *jobs, int64_t now)
{
	size_t n = json_array_size(jobs);
	list_row *rows = dbcron__calloc(n ? n : 1, sizeof(*rows));
	bool ok = rows != NULL;
	int wn = 4, ws = 8, wt = 2, wx = 9, wl = 8;
	for (size_t i = 0; ok && i < n; i++) {
		list_row *r = &rows[i];
		list_row_fill(r, json_array_get(jobs, i), now);
		ok = r->cmd != NULL;
		wn = width(wn, r->name);
		ws = width(ws, r->sched);
		wt = width(wt, r->tz);
		wx = width(wx, r->next);
		wl = width(wl, r->last);
	}
	if (ok)
		printf("%-*s  %-*s  %-*s  %-6s  %-*s  %-*s  %s\n", wn, "NAME", ws, "SCHEDULE", wt,
		       "TZ", "PAUSED", wx, "NEXT FIRE", wl, "LAST RUN", "COMMAND");
	for (size_t i = 0; ok && i < n; i++) {
		const list_row *r = &rows[i];
		printf("%-*s  %-*s  %-*s  %-6s  %-*s  %-*s  %s%s%s%s\n", wn, r->name, ws, r->sched, wt,
		       r->tz, r->paused, wx, r->next, wl, r->last, r->cmd,
		       r->unrunnable ? " (" : "", r->unrunnable ? r->unrunnable : "",
		       r->unrunnable ? ")" : "");
	}
	for (size_t i = 0; rows && i < n; i++)
		free(rows[i].cmd);
	dbcron__free(rows);
	return ok;
}

/* Every page of app_jobs_page into one array; *now is the first page's. */
static int list_all(store *s, json_t **out, int64_t *now, dbcron_err *err)
{
	json_t *all = json_array(), *page = NULL;
	char cursor[256] = "";
	int rc = DBCRON_OK;
	*out = NULL;
	if (!all)
		return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory");
	for (bool first = true;; first = false) {
		if ((rc = app_jobs_page(s, cursor, APP_JOBS_PAGE_MAX, &page, err)))
			break;
		if (first)
			*now = json_integer_value(json_object_get(page, "now_ms"));
		const char *next = json_string_value(json_object_get(page, "next_cursor"));
		if (json_array_extend(all, json_object_get(page, "jobs"))) {
			rc = dbcron_err_set(err, DBCRON_ENOMEM, "out of memory");
			break;
		}
		if (!next)
			break;
		snprintf(cursor, sizeof(cursor), "%s", next);
		json_decref(page);
		page = NULL;
	}
	json_decref(page);
	if (rc)
		json_decref(all);
	else
		*out = all;
	return rc;
}

static int job_list(int argc, char **argv)
{
	simple_args a;
	int status = parse_simple("job list", argc, argv, 0, true, list_usage, &a);
	if (status >= 0)
		return status;
	store *s = NULL;
	if ((status = cli_open_store("job list", &a.cm.db, &s)))
		return status;
	dbcron_err err = {0};
	json_t *arr = NULL;
	int64_t now = 0;
	if (list_all(s, &arr, &now, &err)) {
		status = err.code == DBCRON_ENOMEM ? cli_oom("job list") : cli_fail(&err);
		goto out;
	}
	if (!a.cm.format || strcmp(a.cm.format, "json")) {
		if (!print_list_table(arr, now))
			status = cli_oom("job list");
		goto out;
	}
	/* one job a line, as before the API shared this form */
	fputc('[', stdout);
	for (size_t i = 0; i < json_array_size(arr); i++) {
		fputs(i ? ",\n" : "\n", stdout);
		if (!print_json(json_incref(json_array_get(arr, i)))) {
			status = cli_oom("job list");
			goto out;
		}
	}
	fputs(json_array_size(arr) ? "\n]\n" : "]\n", stdout);
out:
	json_decref(arr);
	store_close(s);
	return status;
}

/* What a command runs as, in job show's table. */
static void show_runas(const dbcron_job *j)
{
	printf("user:              %s", j->user ? j->user : "the node's");
	if (j->group)
		printf(" (group %s)", j->group);
	printf("\ncwd:               %s\n", j->cwd ? j->cwd : "the user's home");
	printf("environment:       %s\n", j->inherit_env
						? "the node's, without its DBCRON_* and password variables"
						: "clean (HOME, USER, LOGNAME, SHELL, PATH, DBCRON_*)");
	for (int i = 0; i < j->envc; i++)
		printf("%s%s\n", i ? "                   " : "env:               ", j->env[i]);
	if (j->env_file)
		printf("env file:          %s (read on the node's host at each run)\n", j->env_file);
	if (j->umask >= 0)
		printf("umask:             %03o\n", (unsigned)j->umask & 0777);
	else
		printf("umask:             the node's\n");
}

/* An HTTP job's call, in job show's table: placeholders as written (their
 * values are resolved on the node at each run, never shown). */
static void show_http(const dbcron_job *j)
{
	printf("http:              %s\n", j->http ? j->http : "");
	int i = 0;
	for (const char *p = j->http_headers; p && *p; i++) {
		size_t len = strcspn(p, "\n");
		printf("%s%.*s\n", i ? "                   " : "header:            ", (int)len, p);
		p += len + (p[len] ? 1 : 0);
	}
	if (j->http_body)
		printf("body:              %zu bytes\n", strlen(j->http_body));
	printf("expect:            %s\n", j->http_expect ? j->http_expect : "2xx");
	printf("tls:               verified, %s\n",
	       j->http_ca_file ? j->http_ca_file : "the system's CAs");
	if (j->env_file)
		printf("env file:          %s (read on the node's host at each run)\n", j->env_file);
}

/* The reaction targets (docs/reactions.md), one a line, in job show's
 * table; nothing for a job without any. */
static void show_reactions(const dbcron_job *j)
{
	const char *const lists[] = {j->on_failure, j->on_success, j->on_misfire, j->on_overdue};
	const char *const labels[] = {"on failure:        ", "on success:        ",
				      "on misfire:        ", "on overdue:        "};
	for (size_t i = 0; i < 4; i++) {
		const char *list = lists[i], *t;
		size_t n;
		for (bool first = true; (t = model_targets_next(&list, &n)); first = false)
			printf("%s%.*s\n", first ? labels[i] : "                   ", (int)n, t);
	}
}

static void show_usage(FILE *f)
{
	fprintf(f, "usage: dbcron job show NAME [--format table|json] [--db URL | --db-file PATH]\n\n"
		   "Every field of the job, its schedule in words (as `dbcron cron check`\n"
		   "says it), its next five fires in its zone and its last 5 runs.\n\n" CLI_DB_HELP);
}

/* job show's table: every field, the schedule in words, the next fires
 * in the job's zone and the last runs. */

/* H's and --spread's seed (docs/cron.md) and --start-jitter, when the job
 * has them: the values "in words" shows come from the seed. */
static void show_spread(const dbcron_job *j)
{
	char b[64], o[64];
	if (j->kind == DBCRON_SCHED_EVERY && j->spread_ms > 0) {
		dbcron__format_duration(j->spread_ms, b, sizeof(b));
		dbcron__format_duration(dbcron__spread_offset_ms(j->spread_seed, j->spread_ms), o,
					sizeof(o));
		printf("spread:            within %s: offset %s (seed %" PRId64 ")\n", b, o,
		       j->spread_seed);
	} else if (j->spread_seed >= 0) {
		printf("spread:            H from seed %" PRId64 "\n", j->spread_seed);
	}
	if (j->start_jitter_ms > 0) {
		dbcron__format_duration(j->start_jitter_ms, b, sizeof(b));
		printf("start jitter:      a random delay of up to %s before each run\n", b);
	}
}

/* What the job runs: an HTTP call, a handler, a statement or a command
 * and how it runs. */
static void show_what_runs(const dbcron_job *j, const char *unrunnable)
{
	if (j->executor == DBCRON_EXEC_HTTP) {
		show_http(j);
	} else if (j->executor == DBCRON_EXEC_HANDLER) {
		printf("handler:           %s\n", j->handler ? j->handler : "");
		if (unrunnable)
			printf("runs on:           %s: its fires wait for one (docs/library.md)\n",
			       unrunnable);
		if (j->arg)
			printf("arg:               %s\n", j->arg);
	} else if (j->executor == DBCRON_EXEC_SQL) {
		printf("sql:               %s\n", j->sql ? j->sql : "");
		/* the file's name, never its content (a URL with a password) */
		printf("sql database:      %s\n",
		       j->sql_db_file ? j->sql_db_file : "the scheduler's own");
	} else {
		printf("command:          ");
		for (int i = 0; i < j->argc; i++) {
			fputc(' ', stdout);
			print_word(stdout, j->argv[i]);
		}
		fputc('\n', stdout);
		show_runas(j);
	}
}

static int show_table(const dbcron_job *j, const app_run_vec *rv, const char *unrunnable,
		      const char *needed_by)
{
	char t[64], b1[256];
	printf("name:              %s\n", j->name);
	printf("id:                %" PRId64 "\n", j->id);
	printf("schedule:          %s", model_schedule_text(j, b1, sizeof(b1)));
	if (j->kind == DBCRON_SCHED_EVERY)
		printf(" (series from %s)", model_time_text(j->anchor_ms, t, sizeof(t)));
	if (j->kind == DBCRON_SCHED_AT && j->spec && strcmp(j->spec, b1 + 3))
		printf(" (given as %s)", j->spec);
	char b2[64], b3[64];
	json_t *words = json_object();
	if (!words)
		return cli_oom("job show");
	app_job_add_words(words, j);
	printf("\nin words:          %s\n", jstr(words, "description"));
	show_spread(j);
	printf("tz:                %s\n", j->tz ? j->tz : "UTC");
	printf("paused:            %s\n", j->paused ? "yes" : "no");
	printf("needed by:         %s\n", *needed_by ? needed_by : "none");
	/* the instants a job is given (its window), each as the field table
	 * names it */
	for (size_t i = 0; i < MODEL_NFIELDS; i++) {
		const model_field *f = &model_fields[i];
		if (f->codec != MODEL_FC_TIME || *(const int64_t *)model_field_cptr(j, f) < 0)
			continue;
		char label[64];
		snprintf(label, sizeof(label), "%s:", model_jobdef_key_of(f->key)->name);
		printf("%-19s%s\n", label,
		       model_time_text(*(const int64_t *)model_field_cptr(j, f), t, sizeof(t)));
	}
	if (j->max_runs > 0)
		printf("max-runs:          %d (%" PRId64 " fired)\n", j->max_runs, j->runs_fired);
	printf("next fire:         %s\n", model_time_text(j->next_fire_at, t, sizeof(t)));
	/* in the job's zone, as `dbcron cron next --tz` prints them */
	const json_t *nf = json_object_get(words, "next_fires");
	for (size_t i = 0; i < json_array_size(nf); i++) {
		json_int_t at = json_integer_value(json_object_get(json_array_get(nf, i), "at_ms"));
		const char *l = app_local_time(j, at, b2, sizeof(b2));
		printf("%s%s\n", i ? "                   " : "next fires:        ", l ? l : "-");
	}
	json_decref(words);
	if (j->set_aside)
		printf("set aside:         %s (fix it with job apply/add, or job resume)\n",
		       j->set_aside);
	show_what_runs(j, unrunnable);
	dbcron__format_duration(j->misfire_threshold_ms, b1, sizeof(b1));
	printf("misfire:           %s (threshold %s, max catch-up %d)\n",
	       dbcron_misfire_name(j->misfire), b1, j->max_catchup);
	printf("overlap:           %s\n", dbcron_overlap_name(j->overlap));
	if (j->priority)
		printf("priority:          %d\n", j->priority);
	if (j->tags) {
		/* one a line in the job; shown as a list */
		printf("tags:              ");
		for (const char *c = j->tags; *c; c++)
			fputs(*c == '\n' ? ", " : (char[2]){*c, 0}, stdout);
		fputc('\n', stdout);
	}
	printf("node loss:         %s\n", dbcron_node_loss_name(j->node_loss));
	if (j->on_every_node) /* docs/scheduler.md "Every node" */
		printf("on every node:     yes (each fire once per live node)\n");
	dbcron__format_duration(j->retry_base_ms, b2, sizeof(b2));
	dbcron__format_duration(j->retry_cap_ms, b3, sizeof(b3));
	printf("retries:           %d (backoff %s doubling up to %s%s)\n", j->max_retries,
	       b2, b3, j->retry_jitter ? ", with jitter" : "");
	if (j->timeout_ms > 0) {
		dbcron__format_duration(j->timeout_ms, b1, sizeof(b1));
		printf("timeout:           %s\n", b1);
	} else {
		printf("timeout:           none\n");
	}
	if (j->max_silence_ms > 0) {
		dbcron__format_duration(j->max_silence_ms, b1, sizeof(b1));
		printf("max silence:       %s (overdue without a success for that long)\n", b1);
	}
	show_reactions(j);
	printf("params:            %s\n", j->params ? j->params : "any (none declared)");
	printf("created:           %s\n", model_time_text(j->created_ms, t, sizeof(t)));
	printf("updated:           %s\n", model_time_text(j->updated_ms, t, sizeof(t)));
	printf("last runs:%s\n", rv->n ? "" : "         none");
	if (rv->n)
		cli_print_runs_table(stdout, rv->v, rv->n, false);
	return CLI_EXIT_OK;
}

static int job_show(int argc, char **argv)
{
	simple_args a;
	int status = parse_simple("job show", argc, argv, 1, true, show_usage, &a);
	if (status >= 0)
		return status;
	store *s = NULL;
	if ((status = cli_open_store("job show", &a.cm.db, &s)))
		return status;
	dbcron_err err = {0};
	bool json = a.cm.format && strcmp(a.cm.format, "json") == 0;
	int rc;

	if (json) {
		json_t *o;
		rc = app_job_get(s, a.name, 5, true, &o, &err);
		if (rc == DBCRON_ENOTFOUND)
			status = no_such_job("job show", a.name);
		else if (rc == DBCRON_ENOMEM || (!rc && !print_json(o)))
			status = cli_oom("job show");
		else if (rc)
			status = cli_fail(&err);
		else
			fputc('\n', stdout);
		goto out;
	}
	app_job_view v;
	rc = app_job_view_get(s, a.name, 5, &v, &err);
	if (rc == DBCRON_ENOTFOUND)
		status = no_such_job("job show", a.name);
	else if (rc == DBCRON_ENOMEM)
		status = cli_oom("job show");
	else if (rc)
		status = cli_fail(&err);
	if (rc)
		goto out;
	status = show_table(&v.job, &v.runs, v.unrunnable, v.needed_by);
	app_job_view_clear(&v);
out:
	store_close(s);
	return status;
}

static void name_usage(FILE *f)
{
	fprintf(f, "usage: dbcron job pause|resume|delete|trigger NAME [--format table|json]\n"
		   "                                             [--db URL | --db-file PATH]\n\n"
		   "  pause    stop firing (a running run goes on)\n"
		   "  resume   fire again; the next fire is computed from the database's now\n"
		   "  delete   remove the job; its runs stay in the run log (job delete --help)\n"
		   "  trigger  one run now, besides the schedule; prints the run id (a paused job's\n"
		   "           run waits until the job is resumed, and it says so; job trigger\n"
		   "           --help)\n"
		   "  --format json  one line, the HTTP API's reply to the same verb:\n"
		   "           {\"job\", \"paused\", \"changed\", \"next_fire_at_ms\"} (pause, resume),\n"
		   "           {\"job\", \"run_id\", \"fire_at_ms\", \"paused\"} (trigger), {\"deleted\"}\n\n"
		   CLI_DB_HELP);
}
static void trigger_usage(FILE *f)
{
	fprintf(f, "usage: dbcron job trigger NAME [--param KEY=VALUE]... [--format table|json]\n"
		   "                        [--db URL | --db-file PATH]\n\n"
		   "One run now, besides the schedule; prints the run id (a paused job's run waits\n"
		   "until the job is resumed, and it says so).\n"
		   "  --param KEY=VALUE  a parameter of the run (repeatable): a shell job sees\n"
		   "           DBCRON_PARAM_KEY, a handler dbcron_handler_param(); KEY is\n"
		   "           [A-Za-z_][A-Za-z0-9_]*, VALUE at most 4 KiB, at most 32 of them; a job\n"
		   "           added with --params takes only the keys it declares, and its defaults\n"
		   "           fill in.  Shown in the run log: never a secret.  UPSTREAM_* keys\n"
		   "           are refused: a job: reaction gives them (DBCRON_UPSTREAM_JOB...).\n"
		   "  --format json  {\"job\", \"run_id\", \"fire_at_ms\", \"paused\"} on one line\n\n"
		   CLI_DB_HELP);
}

static void delete_usage(FILE *f)
{
	fprintf(f, "usage: dbcron job delete NAME [--force] [--format table|json] [--db URL | --db-file PATH]\n\n"
		   "Remove the job; its runs stay in the run log.  A job others need (their\n"
		   "--needs name it) is refused, naming them, unless --force, which deletes it\n"
		   "and sets them aside until their --needs change (it names them).  --format json\n"
		   "prints {\"deleted\", \"detached\" (when --force set some aside)}.\n\n" CLI_DB_HELP);
}

/* What a verb did, in words (--format json: app_job_result_json). */
static void print_verb(const char *name, app_verb v, const app_job_result *r)
{
	char t[64];
	if (v == APP_VERB_DELETE) {
		printf("deleted job '%s'\n", name);
		if (r->detached[0])
			printf("detached %s: set aside until their --needs change\n", r->detached);
	} else if (v == APP_VERB_TRIGGER) {
		printf("triggered job '%s': run %" PRId64 " at %s%s\n", name, r->run_id,
		       model_time_text(r->fire_at, t, sizeof(t)),
		       r->paused ? "; the job is paused: the run waits until it is resumed" : "");
	} else if (!r->changed) {
		printf("job '%s' is already %s\n", name, v == APP_VERB_PAUSE ? "paused" : "active");
	} else if (v == APP_VERB_PAUSE) {
		printf("paused job '%s'\n", name);
	} else {
		printf("resumed job '%s', next fire %s\n", name,
		       model_time_text(r->next_fire, t, sizeof(t)));
	}
}

/* pause, resume, delete, trigger: one job by name (app/jobs.c).  A pause
 * or delete returns once every live node has seen it; one that did not
 * confirm in time is named on stderr, and the change itself stands. */
static int job_by_name(const char *sub, int argc, char **argv)
{
	char cmd[32];
	snprintf(cmd, sizeof(cmd), "job %s", sub);
	simple_args a;
	int status = parse_simple(cmd, argc, argv, 1, true,
				  !strcmp(sub, "delete")    ? delete_usage
				  : !strcmp(sub, "trigger") ? trigger_usage
							    : name_usage,
				  &a);
	if (status >= 0)
		return status;
	store *s = NULL;
	if ((status = cli_open_store(cmd, &a.cm.db, &s)))
		return status;
	dbcron_err err = {0};
	app_job_result r;
	int rc;
	app_verb v = !strcmp(sub, "delete")    ? APP_VERB_DELETE
		     : !strcmp(sub, "trigger") ? APP_VERB_TRIGGER
		     : !strcmp(sub, "pause")   ? APP_VERB_PAUSE
					       : APP_VERB_RESUME;
	if (v == APP_VERB_DELETE)
		rc = app_job_delete_force(s, a.name, a.force, &r, &err);
	else if (v == APP_VERB_TRIGGER)
		rc = app_job_trigger_params(s, a.name, a.params, a.nparams, &r, &err);
	else if (v == APP_VERB_PAUSE)
		rc = app_job_pause(s, a.name, &r, &err);
	else
		rc = app_job_resume(s, a.name, &r, &err);
	if (!rc && cli_format_of(a.cm.format) == CLI_FMT_JSON) {
		if (!cli_print_json_line(app_job_result_json(a.name, v, &r)))
			status = cli_oom(cmd);
	} else if (!rc) {
		print_verb(a.name, v, &r);
	}
	if (!rc && r.warning[0])
		fprintf(stderr, "dbcron %s: warning: %s\n", cmd, r.warning);
	if (rc == DBCRON_ENOTFOUND)
		status = no_such_job(cmd, a.name);
	else if (rc)
		status = cli_fail_in(cmd, &err);
	store_close(s);
	return status;
}

/* ------------------------------------------------------------- dispatch */

static void job_usage(FILE *f)
{
	fprintf(f, "usage: dbcron job COMMAND [ARGS...]\n\n"
		   "  add NAME ...        add a job (dbcron job add --help)\n"
		   "  list                list jobs\n"
		   "  show NAME           a job's definition and last runs\n"
		   "  pause NAME          stop firing\n"
		   "  resume NAME         fire again from now\n"
		   "  delete NAME         remove (its runs stay); a job others --need is refused\n"
		   "                      unless --force, which sets them aside\n"
		   "  trigger NAME        run once now\n"
		   "  backfill NAME --from T1 --to T2\n"
		   "                      a run for each fire instant in [T1, T2) that has none\n"
		   "  set NAME FLAGS...   change some fields of a job (as job add's flags)\n"
		   "  rename OLD NEW      give a job a new name (its runs follow)\n"
		   "  apply FILE          create/update jobs from a JSON file (--dry-run: diff)\n"
		   "  export              every job as a file job apply reads back\n"
		   "  import-crontab FILE crontab lines as job apply JSON (or --apply them)\n"
		   "Each takes --db URL (or --db-file PATH) and --help.\n");
}

int cli_job(int argc, char **argv)
{
	if (argc < 2) {
		job_usage(stderr);
		return CLI_EXIT_USAGE;
	}
	const char *sub = argv[1];
	if (!strcmp(sub, "--help") || !strcmp(sub, "-h") || !strcmp(sub, "help")) {
		job_usage(stdout);
		return CLI_EXIT_OK;
	}
	if (!strcmp(sub, "add"))
		return job_add(argc - 1, argv + 1);
	if (!strcmp(sub, "list"))
		return job_list(argc - 1, argv + 1);
	if (!strcmp(sub, "show"))
		return job_show(argc - 1, argv + 1);
	if (!strcmp(sub, "apply"))
		return cli_job_apply(argc - 1, argv + 1);
	if (!strcmp(sub, "backfill"))
		return cli_job_backfill(argc - 1, argv + 1);
	int edit = cli_job_edit(sub, argc - 1, argv + 1);
	if (edit >= 0)
		return edit;
	if (!strcmp(sub, "import-crontab"))
		return cli_job_import_crontab(argc - 1, argv + 1);
	if (!strcmp(sub, "pause") || !strcmp(sub, "resume") || !strcmp(sub, "delete") ||
	    !strcmp(sub, "trigger"))
		return job_by_name(sub, argc - 1, argv + 1);
	fprintf(stderr, "dbcron job: unknown command '%s'\n\n", sub);
	job_usage(stderr);
	return CLI_EXIT_USAGE;
}
