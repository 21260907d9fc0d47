/*
 * `dbcron runs` and `dbcron runs show`: read-only views of the run log, as
 * a table for people and csv/json for programs, and `runs --follow`, which
 * prints runs as they end.  Also the run table job show prints
 * (cli_print_runs_table).  The csv columns of `runs` are a contract: job, fire_at_ms, attempt,
 * state, node, started_ms, finished_ms, exit_code first, in that order,
 * UTC epoch milliseconds, empty when unset; new columns only go after them.
 * "now" in --since is the database's clock.  A run's JSON object is model_run_json's, the same
 * any other front end prints.  A follower hands out each run once: runs
 * listed first are marked seen before the first poll (app_follow).
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "app/app.h"
#include "cli/cli.h"
#include "core/alloc.h"
#include "core/timeutil.h"
#include "model/jobdef.h"
#include "model/json.h"

/* ------------------------------------------------------- run helpers */

/* One line of text for a table cell: control characters become spaces,
 * long text is cut with "...". */
static void cell(char *buf, size_t len, const char *s, size_t max)
{
	size_t n = 0;
	if (!s)
		s = "";
	for (; *s && n + 1 < len && n < max; s++)
		buf[n++] = iscntrl((unsigned char)*s) ? ' ' : *s;
	if (*s && n >= 3 && n == max) {
		buf[n - 3] = buf[n - 2] = buf[n - 1] = '.';
	}
	buf[n] = '\0';
}

static void run_duration(const dbcron_run *r, char *buf, size_t len)
{
	if (r->started_ms >= 0 && r->finished_ms >= r->started_ms)
		dbcron__format_duration(r->finished_ms - r->started_ms, buf, len);
	else
		snprintf(buf, len, "-");
}

/* The first line of a run's output, for a table cell. */
static void first_line(char *buf, size_t len, const char *out, size_t max)
{
	char line[256];
	size_t n = 0;
	for (; out && *out && *out != '\n' && n + 1 < sizeof(line); out++)
		line[n++] = *out;
	line[n] = '\0';
	cell(buf, len, line, max);
}

/* The NODE cell: the node, and an every-node run's place among the fire's
 * nodes ("b 1/3"; one not yet claimed shows the node it is for). */
static const char *node_cell(const dbcron_run *r, char *buf, size_t len)
{
	const char *node = r->node ? r->node : r->for_node;
	if (r->node_total <= 0)
		return r->node ? r->node : "-";
	snprintf(buf, len, "%s %d/%d", node ? node : "-", r->node_index, r->node_total);
	return buf;
}

/* Column widths and what a table shows; output adds OUTPUT (the first
 * line of the captured output, cut). */
typedef struct runs_layout {
	bool with_job, output;
	int wj, wn;
} runs_layout;

static void print_runs_header(FILE *f, const runs_layout *l)
{
	if (l->with_job)
		fprintf(f, "%-8s  %-*s  ", "RUN", l->wj, "JOB");
	else
		fprintf(f, "  %-8s  ", "RUN");
	fprintf(f, "%-24s  %3s  %-9s  %-*s  %-24s  %-8s  %4s  %s%s\n", "FIRE AT", "TRY",
		"STATE", l->wn, "NODE", "STARTED", "TOOK", "EXIT", l->output ? "OUTPUT  " : "",
		"ERROR");
}

static void print_run_row(FILE *f, const runs_layout *l, const dbcron_run *r)
{
	char fire[64], start[64], took[32], code[16], error[96], out[80] = "", node[400];
	model_time_text(r->fire_at, fire, sizeof(fire));
	model_time_text(r->started_ms, start, sizeof(start));
	run_duration(r, took, sizeof(took));
	if (r->has_exit_code)
		snprintf(code, sizeof(code), "%d", r->exit_code);
	else
		snprintf(code, sizeof(code), "-");
	cell(error, sizeof(error), r->error, 80);
	if (r->missed > 0) {
		size_t len = strlen(error);
		snprintf(error + len, sizeof(error) - len, "%s(%" PRId64 " missed)", len ? " " : "",
			 r->missed);
	}
	if (r->backfill) {
		size_t len = strlen(error);
		snprintf(error + len, sizeof(error) - len, "%s(backfill)", len ? " " : "");
	}
	if (l->with_job)
		fprintf(f, "%-8" PRId64 "  %-*s  ", r->id, l->wj, r->job_name ? r->job_name : "");
	else
		fprintf(f, "  %-8" PRId64 "  ", r->id);
	fprintf(f, "%-24s  %3d  %-9s  %-*s  %-24s  %-8s  %4s  ", fire, r->attempt,
		dbcron_run_state_name(r->state), l->wn, node_cell(r, node, sizeof(node)), start, took,
		code);
	if (l->output) {
		first_line(out, sizeof(out), r->output, 40);
		fprintf(f, "%-40s  ", out[0] ? out : "-");
	}
	fprintf(f, "%s\n", error);
}

/* Widen l's columns to fit runs[0..n). */
static void fit_layout(runs_layout *l, const dbcron_run *runs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int len = runs[i].job_name ? (int)strlen(runs[i].job_name) : 0;
		l->wj = len > l->wj ? len : l->wj;
		char node[400];
		len = (int)strlen(node_cell(&runs[i], node, sizeof(node)));
		l->wn = len > l->wn ? len : l->wn;
	}
}

static void print_runs_with(FILE *f, runs_layout *l, const dbcron_run *runs, size_t n)
{
	fit_layout(l, runs, n);
	print_runs_header(f, l);
	for (size_t i = 0; i < n; i++)
		print_run_row(f, l, &runs[i]);
}

static void print_runs(FILE *f, const dbcron_run *runs, size_t n, bool with_job, bool output)
{
	runs_layout l = {.with_job = with_job, .output = output, .wj = 3, .wn = 4};
	print_runs_with(f, &l, runs, n);
}

void cli_print_runs_table(FILE *f, const dbcron_run *runs, size_t n,
			  bool with_job)
{
	print_runs(f, runs, n, with_job, false);
}

/* ------------------------------------------------------------- csv */

static const char runs_csv_header[] =
	"job,fire_at_ms,attempt,state,node,started_ms,finished_ms,exit_code,"
	"missed,error,run_id,due_at_ms,for_node,node_index,node_total";

static void csv_run(FILE *f, const dbcron_run *r)
{
	cli_csv_field(f, r->job_name);
	fprintf(f, ",%" PRId64 ",%d,%s,", r->fire_at, r->attempt,
		dbcron_run_state_name(r->state));
	cli_csv_field(f, r->node);
	fputc(',', f);
	cli_csv_ms(f, r->started_ms);
	fputc(',', f);
	cli_csv_ms(f, r->finished_ms);
	fputc(',', f);
	if (r->has_exit_code)
		fprintf(f, "%d", r->exit_code);
	fprintf(f, ",%" PRId64 ",", r->missed);
	cli_csv_field(f, r->error);
	fprintf(f, ",%" PRId64 ",", r->id);
	cli_csv_ms(f, r->due_at);
	fputc(',', f);
	/* every node: empty for an ordinary run */
	if (r->node_total > 0) {
		cli_csv_field(f, r->for_node);
		fprintf(f, ",%d,%d", r->node_index, r->node_total);
	} else {
		fputs(",,", f);
	}
	fputc('\n', f);
}

/* ------------------------------------------------------------- runs */

static void runs_usage(FILE *f)
{
	fprintf(f,
		"usage: dbcron runs [--job NAME] [--state S] [--since TIME] [--limit N] [--output]\n"
		"                   [--follow [--interval DUR]] [--format table|csv|json]\n"
		"                   [--db URL | --db-file PATH]\n"
		"       dbcron runs show ID [--format table|json] [--db URL | --db-file PATH]\n"
		"       dbcron runs cancel ID [--format table|json] [--db URL | --db-file PATH]\n\n"
		"The run log: the newest --limit N runs (default 50; 0 = all) by fire time,\n"
		"oldest first, so the newest is at the bottom, as journalctl and tail show a\n"
		"log; runs of one instant by job name, then attempt.  --state: scheduled,\n"
		"running, succeeded, failed, timed_out, skipped, misfired, abandoned,\n"
		"cancelled.  --since:\n"
		"runs whose fire time is at or after TIME (RFC 3339, epoch seconds, now,\n"
		"now+DUR; now is the database's).  --output adds OUTPUT to the table: the first\n"
		"line of the captured output, cut to 40 characters (json carries it whole, csv\n"
		"not: a record a line; runs show ID prints all of it).\n"
		"--follow: after the listing, print each run as it ends, in the order runs\n"
		"end, until SIGINT or SIGTERM (exit status 0); the same filters apply (--state\n"
		"then names an end state).  The database is read every --interval (default 1s,\n"
		"at least 100ms).  With --format json a follower prints one object a line.\n"
		"csv columns: %s\n"
		"(times in UTC epoch milliseconds, empty when unset).\n"
		"runs show ID: everything about one run (job, state, times, node, attempt,\n"
		"exit code, error, missed fires), its attempt chain (every attempt of the\n"
		"same fire, the run marked *) and its captured output.\n"
		"runs cancel ID: stop the run wherever it runs.  One not yet claimed ends\n"
		"cancelled at once; a claimed or running one is stopped by its node within\n"
		"about a heartbeat (a shell job's process group: SIGTERM, then SIGKILL after\n"
		"the kill grace; a handler through its context's flag) and ends cancelled,\n"
		"never retried.  An unknown ID or a run that already ended is an error\n"
		"(exit status 1) and writes nothing.\n\n" CLI_DB_HELP,
		runs_csv_header);
}

typedef struct stream_ctx {
	int fmt;
	bool lines; /* json: one object a line, no array (a follower) */
	bool output;
	runs_layout layout;
	app_follow *fw; /* the rows shown are the follower's seen */
	size_t n;
	bool failed;
} stream_ctx;

static int stream_run(void *ctx, const dbcron_run *r)
{
	stream_ctx *sc = ctx;
	if (sc->fw && app_follow_seen(sc->fw, r)) {
		sc->failed = true;
		return 1;
	}
	if (sc->fmt == CLI_FMT_CSV) {
		csv_run(stdout, r);
	} else if (sc->fmt == CLI_FMT_TABLE) {
		print_run_row(stdout, &sc->layout, r);
	} else {
		json_t *o = model_run_json(r);
		if (!o) {
			sc->failed = true;
			return 1;
		}
		if (!sc->lines)
			fputs(sc->n ? ",\n" : "\n", stdout);
		int rc = json_dumpf(o, stdout, JSON_COMPACT | JSON_ENSURE_ASCII);
		json_decref(o);
		if (sc->lines)
			fputc('\n', stdout);
		if (rc) {
			sc->failed = true;
			return 1;
		}
	}
	sc->n++;
	return 0;
}

/* store_run_cb: a deep copy with the output, for the table's OUTPUT. */
static int collect_with_output(void *ctx, const dbcron_run *run)
{
	app_run_vec *rv = ctx;
	if (dbcron__grow((void **)&rv->v, &rv->cap, rv->n + 1, sizeof(dbcron_run)) ||
	    app_run_copy(&rv->v[rv->n], run, true)) {
		rv->rc = DBCRON_ENOMEM;
		return 1;
	}
	rv->n++;
	return 0;
}

/* Set by SIGINT and SIGTERM: a follower stops at its next wake-up. */
static volatile sig_atomic_t follow_stop;

static void on_stop_signal(int sig)
{
	(void)sig;
	follow_stop = 1;
}

/* Poll until a signal: what ended since each wake-up goes to sc.  The
 * handlers have no SA_RESTART, so a signal cuts the sleep short. */
static int follow(store *s, app_follow *fw, stream_ctx *sc, int64_t interval_ms,
		  dbcron_err *err)
{
	struct sigaction sa, old_int, old_term;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	int rc = DBCRON_OK;
	while (!follow_stop) {
		if (fflush(stdout) || ferror(stdout)) {
			rc = dbcron_err_set(err, DBCRON_EIO, "writing output: %s", strerror(errno));
			break;
		}
		struct timespec ts = {.tv_sec = interval_ms / 1000,
				      .tv_nsec = (long)(interval_ms % 1000) * 1000000L};
		nanosleep(&ts, NULL);
		if (follow_stop)
			break;
		sc->fw = NULL; /* a poll's runs are marked seen by the poll */
		if ((rc = app_follow_poll(s, fw, stream_run, sc, err)))
			break;
		if (sc->failed) {
			rc = dbcron_err_set(err, DBCRON_ENOMEM, "out of memory writing JSON");
			break;
		}
	}
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	return rc;
}

static int runs_show(int argc, char **argv);

/* What runs was asked, before the database is opened. */
typedef struct runs_args {
	const char *since, *interval;
	store_run_filter flt;
	bool output, follow;
	int64_t interval_ms; /* --interval's, checked */
} runs_args;

static int runs_opt(void *ctx, int c, char *arg)
{
	runs_args *a = ctx;
	switch (c) {
	case 'j':
		a->flt.job = arg;
		break;
	case 's': {
		char low[32];
		size_t i;
		for (i = 0; arg[i] && i + 1 < sizeof(low); i++)
			low[i] = (char)tolower((unsigned char)arg[i]);
		low[i] = '\0';
		a->flt.state = dbcron_run_state_parse(low);
		if (a->flt.state < 0)
			return cli_usage_error("runs",
				"--state '%s': expected scheduled, running, succeeded, failed, timed_out, skipped, misfired, abandoned or cancelled",
				arg);
		break;
	}
	case 'S':
		a->since = arg;
		break;
	case 'l': {
		char *end;
		errno = 0;
		long v = strtol(arg, &end, 10);
		if (!*arg || *end || errno || v < 0)
			return cli_usage_error("runs",
				"--limit '%s': expected a whole number >= 0 (0 = no limit)", arg);
		a->flt.limit = v;
		break;
	}
	case 'o':
		a->output = true;
		break;
	case 'w':
		a->follow = true;
		break;
	default: /* 'i' */
		a->interval = arg;
		break;
	}
	return 0;
}

/* The syntax of what runs was asked, before the database, so that a typo
 * costs no connection: 0 or the usage error's status. */
static int runs_check(runs_args *a, int fmt)
{
	dbcron_err err = {0};
	int64_t ms;
	if (a->since && dbcron__parse_time(a->since, 0, &ms, &err))
		return cli_usage_error("runs", "--since: %s", err.msg);
	if (a->output && fmt != CLI_FMT_TABLE)
		return cli_usage_error("runs", "--output is for the table (json always carries the output; csv keeps one line a run)");
	if (a->interval && !a->follow)
		return cli_usage_error("runs", "--interval is for --follow");
	if (a->interval && (dbcron__parse_duration(a->interval, 1, &a->interval_ms, &err) ||
			    a->interval_ms < 100))
		return cli_usage_error("runs", "--interval '%s': expected a duration of at least 100ms%s%s",
				       a->interval, err.msg[0] ? ": " : "", err.msg);
	if (a->follow && a->flt.state && !dbcron_run_state_terminal(a->flt.state))
		return cli_usage_error("runs", "--state %s with --follow: a follower prints runs as they end; give an end state",
				       dbcron_run_state_name(a->flt.state));
	return 0;
}

/* The listing: a table (every row first, for the widths), or csv/json
 * streamed as the store reads them. */
static int runs_listing(store *s, const runs_args *a, stream_ctx *sc, app_follow *fw,
			dbcron_err *err)
{
	int rc;
	if (sc->fmt != CLI_FMT_TABLE) {
		if (sc->fmt == CLI_FMT_CSV)
			printf("%s\n", runs_csv_header);
		else if (!a->follow)
			fputc('[', stdout);
		rc = app_runs_fetch(s, &a->flt, NULL, stream_run, sc, err);
		if (!rc && sc->failed)
			rc = dbcron_err_set(err, DBCRON_ENOMEM, "out of memory writing JSON");
		if (sc->fmt == CLI_FMT_JSON && !a->follow)
			fputs(sc->n ? "\n]\n" : "]\n", stdout);
		return rc;
	}
	app_run_vec rv = {0};
	rc = app_runs_fetch(s, &a->flt, NULL, a->output ? collect_with_output : app_run_collect,
			    &rv, err);
	if (!rc && rv.rc)
		rc = dbcron_err_set(err, rv.rc, "out of memory");
	for (size_t i = 0; !rc && a->follow && i < rv.n; i++)
		if (app_follow_seen(fw, &rv.v[i]))
			rc = dbcron_err_set(err, DBCRON_ENOMEM, "out of memory");
	if (!rc) {
		/* a follower's later rows line up with these */
		if (a->follow)
			print_runs_with(stdout, &sc->layout, rv.v, rv.n);
		else if (rv.n)
			print_runs(stdout, rv.v, rv.n, true, a->output);
		else
			printf("no runs\n");
	}
	app_run_vec_free(&rv);
	return rc;
}

static int runs_list(const cli_common *cm, runs_args *a)
{
	int fmt = cli_format_of(cm->format);
	int status = runs_check(a, fmt);
	if (status)
		return status;
	store *s = NULL;
	if ((status = cli_open_store("runs", &cm->db, &s)))
		return status;
	dbcron_err err = {0};
	int64_t now;
	int rc = DBCRON_OK;
	app_follow fw = {0};
	if (a->since) {
		rc = app_now_ms(s, &now, &err);
		if (!rc)
			rc = dbcron__parse_time(a->since, now, &a->flt.since_ms, &err);
		if (rc)
			goto out_rc;
	}
	/* before the listing, so that a run that ends while it is read is
	 * handed out by the first poll rather than lost between the two */
	if (a->follow && (rc = app_follow_start(s, &fw, &a->flt, &err)))
		goto out_rc;
	stream_ctx sc = {.fmt = fmt, .lines = a->follow, .output = a->output,
			 .layout = {.with_job = true, .output = a->output, .wj = 16, .wn = 12},
			 .fw = a->follow ? &fw : NULL};
	rc = runs_listing(s, a, &sc, &fw, &err);
	if (!rc && a->follow)
		rc = follow(s, &fw, &sc, a->interval_ms, &err);
out_rc:
	app_follow_clear(&fw);
	if (rc)
		status = cli_fail(&err);
	store_close(s);
	if (!status && (fflush(stdout) || ferror(stdout))) {
		fprintf(stderr, "dbcron runs: writing output: %s\n", strerror(errno));
		status = CLI_EXIT_FAIL;
	}
	return status;
}

int cli_runs(int argc, char **argv)
{
	static const struct option own[] = {
		{"job", required_argument, NULL, 'j'},
		{"state", required_argument, NULL, 's'},
		{"since", required_argument, NULL, 'S'},
		{"limit", required_argument, NULL, 'l'},
		{"output", no_argument, NULL, 'o'},
		{"follow", no_argument, NULL, 'w'},
		{"interval", required_argument, NULL, 'i'},
		{NULL, 0, NULL, 0},
	};
	static const char *const formats[] = {"table", "csv", "json", NULL};
	runs_args ra = {.flt = {.job = NULL, .state = 0, .since_ms = -1, .limit = 50},
		       .interval_ms = 1000};
	const cli_spec sp = {.cmd = "runs",
			     .common = CLI_COMMON_DB | CLI_COMMON_FORMAT | CLI_COMMON_HELP,
			     .own = own, .usage = runs_usage, .formats = formats,
			     .own_opt = runs_opt, .ctx = &ra};
	cliopt o;
	cli_common cm;

	if (argc > 1 && !strcmp(argv[1], "show"))
		return runs_show(argc - 1, argv + 1);
	if (argc > 1 && !strcmp(argv[1], "cancel"))
		return runs_show(argc - 1, argv + 1);
	int status = cli_parse(&sp, &o, &cm, argc, argv);
	if (status >= 0 || (status = cliopt_no_pos(&o)))
		return status;
	return runs_list(&cm, &ra);
}

/* ---------------------------------------------------------- runs show */

static void show_usage(FILE *f)
{
	runs_usage(f);
}

/* A text field as runs show prints it: "-" when unset. */
static const char *or_dash(const char *v)
{
	return v ? v : "-";
}

static void show_time(const char *label, int64_t ms)
{
	char t[64];
	printf("%-10s %s\n", label, model_time_text(ms >= 0 ? ms : -1, t, sizeof(t)));
}

/* One run's view (app_run_view_get), as people read it. */
static void print_run_show(const app_run_view *v)
{
	const dbcron_run *r = &v->run;
	char took[32];
	printf("run:       %" PRId64 "\n", r->id);
	printf("job:       %s\n", or_dash(r->job_name));
	printf("state:     %s\n", or_dash(dbcron_run_state_name(r->state)));
	printf("attempt:   %" PRId64 "\n", (int64_t)r->attempt);
	show_time("fire at:", r->fire_at);
	show_time("due at:", r->due_at);
	show_time("started:", r->started_ms);
	show_time("finished:", r->finished_ms);
	if (r->started_ms >= 0 && r->finished_ms >= 0 && r->finished_ms >= r->started_ms) {
		dbcron__format_duration(r->finished_ms - r->started_ms, took, sizeof(took));
		printf("took:      %s\n", took);
	}
	printf("node:      %s\n", or_dash(r->node));
	if (r->has_exit_code)
		printf("exit code: %" PRId64 "\n", (int64_t)r->exit_code);
	else
		printf("exit code: -\n");
	printf("error:     %s\n", or_dash(r->error));
	if (r->missed > 0)
		printf("missed:    %" PRId64 " fires\n", (int64_t)r->missed);
	if (r->backfill)
		printf("kind:      backfill\n");
	if (r->params)
		printf("params:    %s\n", r->params);
	if (r->cancel_requested_ms > 0)
		show_time("cancel:", r->cancel_requested_ms);
	printf("attempts:  %zu of this fire\n", v->attempts.n);
	for (size_t i = 0; i < v->attempts.n; i++) {
		const dbcron_run *a = &v->attempts.v[i];
		char t[64];
		printf("  %s %-8" PRId64 "  try %-3" PRId64 "  %-9s  finished %s\n",
		       a->id == r->id ? "*" : " ", a->id, (int64_t)a->attempt,
		       or_dash(dbcron_run_state_name(a->state)),
		       model_time_text(a->finished_ms >= 0 ? a->finished_ms : -1, t, sizeof(t)));
	}
	const char *out = r->output;
	if (!out || !*out) {
		printf("output:    none captured\n");
		return;
	}
	printf("output:\n");
	/* indented, so that the output cannot pass for a field above */
	for (const char *p = out; *p;) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		printf("  %.*s\n", (int)len, p);
		p += len + (nl ? 1 : 0);
	}
}

/* runs show's --format: table or json, said its own way. */
static int show_format(void *ctx, int c, char *arg)
{
	int *fmt = ctx;
	(void)c; /* CLI_OPT_FORMAT, the only one */
	*fmt = cli_format_of(arg);
	if (*fmt < 0)
		return cli_usage_error("runs show", "--format '%s': expected table, csv or json", arg);
	if (*fmt == CLI_FMT_CSV)
		return cli_usage_error("runs show", "--format csv: expected table or json");
	return 0;
}

/* runs cancel ID: the cancel, then the run as it left it. */
static int runs_cancel(store *s, long long id, int fmt)
{
	dbcron_err err = {0};
	json_t *j = NULL;
	bool done = false;
	int rc = app_run_cancel(s, (int64_t)id, &j, &done, &err), status = 0;
	if (rc == DBCRON_ENOTFOUND) {
		fprintf(stderr, "dbcron runs cancel: no run with id %lld\n", id);
		status = CLI_EXIT_FAIL;
	} else if (rc == DBCRON_EEXISTS) {
		fprintf(stderr, "dbcron runs cancel: %s\n", err.msg);
		status = CLI_EXIT_FAIL;
	} else if (rc) {
		status = cli_fail(&err);
	} else if (fmt == CLI_FMT_JSON) {
		if (json_dumpf(j, stdout, JSON_COMPACT | JSON_ENSURE_ASCII))
			status = CLI_EXIT_FAIL;
		fputc('\n', stdout);
	} else if (done) {
		printf("run %lld cancelled (it had not started)\n", id);
	} else {
		const char *node = json_string_value(json_object_get(j, "node"));
		printf("run %lld: cancel requested; node %s stops it within about a heartbeat\n", id,
		       node ? node : "-");
	}
	json_decref(j);
	return status;
}

static int runs_show(int argc, char **argv)
{
	int fmt = CLI_FMT_TABLE;
	bool cancel = !strcmp(argv[0], "cancel");
	const cli_spec sp = {.cmd = cancel ? "runs cancel" : "runs show",
			     .common = CLI_COMMON_DB | CLI_COMMON_FORMAT | CLI_COMMON_HELP,
			     .usage = show_usage, .own_opt = show_format, .ctx = &fmt};
	cliopt o;
	cli_common cm;

	int status = cli_parse(&sp, &o, &cm, argc, argv);
	if (status >= 0)
		return status;
	if (o.npos == 0)
		return cli_usage_error(sp.cmd, "missing the run ID");
	if (o.npos > 1 || o.dashdash)
		return cli_usage_error(sp.cmd, "unexpected argument '%s'",
				       o.npos > 1 ? o.pos[1] : "--");
	char *end;
	errno = 0;
	long long id = o.pos[0][0] >= '0' && o.pos[0][0] <= '9' ? strtoll(o.pos[0], &end, 10) : -1;
	if (id < 1 || errno || *end)
		return cli_usage_error(sp.cmd, "'%s': expected a run id (a whole number >= 1)",
				       o.pos[0]);
	store *s = NULL;
	if ((status = cli_open_store(o.cmd, &cm.db, &s)))
		return status;
	if (cancel) {
		status = runs_cancel(s, id, fmt);
		store_close(s);
		return status;
	}
	dbcron_err err = {0};
	app_run_view v;
	json_t *run = NULL;
	int rc = app_run_view_get(s, (int64_t)id, &v, &err);
	bool have = rc == DBCRON_OK; /* v is cleared on every error */
	if (!rc && fmt == CLI_FMT_JSON && !(run = app_run_view_json(&v)))
		rc = dbcron_err_set(&err, DBCRON_ENOMEM, "out of memory");
	if (rc == DBCRON_ENOTFOUND) {
		fprintf(stderr, "dbcron runs show: no run with id %lld\n", id);
		status = CLI_EXIT_USAGE;
	} else if (rc) {
		status = cli_fail(&err);
	} else if (fmt == CLI_FMT_JSON) {
		if (json_dumpf(run, stdout, JSON_COMPACT | JSON_ENSURE_ASCII))
			status = CLI_EXIT_FAIL;
		fputc('\n', stdout);
	} else {
		print_run_show(&v);
	}
	if (have)
		app_run_view_clear(&v);
	json_decref(run);
	store_close(s);
	if (!status && (fflush(stdout) || ferror(stdout))) {
		fprintf(stderr, "dbcron runs show: writing output: %s\n", strerror(errno));
		status = CLI_EXIT_FAIL;
	}
	return status;
}
