/*
 * `dbcron cron next|check`: the cron engine from the command line, with
 * no database.  Owns argument parsing and output format only; the walk is
 * src/app/cron.c's (shared with the HTTP API), every rule src/cron/'s.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/app.h"
#include "core/alloc.h"
#include "cli/cli.h"
#include "core/timeutil.h"
#include "dbcron/cron.h"

#define MAX_COUNT 100000

static const char cron_help[] =
	"usage: dbcron cron next EXPR [--tz ZONE] [--from TIME] [--count N] [--seed N]\n"
	"                        [--format iso|epoch|json]\n"
	"       dbcron cron next [EXPR] --job NAME [--db URL | --db-file PATH] [...]\n"
	"       dbcron cron check EXPR [--seed N] [--format table|json]\n\n"
	"Compute and explain cron expressions.  The dialect follows from the field\n"
	"count: 5 fields are Unix (cronie), 6 or 7 are Quartz (with seconds and an\n"
	"optional year); @hourly, @daily, @weekly, @monthly, @yearly are Unix.\n"
	"Quote EXPR; see docs/cron.md for the rules, including daylight saving.\n";

static const char next_help[] =
	"usage: dbcron cron next EXPR [--tz ZONE] [--from TIME] [--count N] [--seed N]\n"
	"                        [--format iso|epoch|json]\n"
	"       dbcron cron next [EXPR] --job NAME [--db URL | --db-file PATH] [...]\n\n"
	"Print the next fire times of EXPR, one per line, strictly after TIME.\n\n"
	"  --job NAME      H takes the values of this stored job's seed; without EXPR,\n"
	"                  the job's own expression and zone\n"
	"  --seed N        H takes the values seed N gives (a job's spread-seed)\n"
	"  --db URL, --db-file PATH: the database of --job (as for job show)\n"
	"  --tz ZONE       IANA time zone the expression is read in (default UTC)\n"
	"  --from TIME     epoch seconds or RFC 3339 (default now)\n"
	"  --count N       how many fires to print, 1-100000 (default 1)\n"
	"  --format F      iso: RFC 3339 with the zone's offset (default);\n"
	"                  epoch: integer UTC seconds; json: an array, one fire a\n"
	"                  line: {\"at\": RFC 3339, \"epoch\": seconds, \"offset\": seconds east}\n\n"
	"Prints nothing and exits 0 when the expression never fires again.\n"
	"Exit status 2 on an invalid expression, zone or option, and on an H without\n"
	"--job or --seed (H's value comes from the job, docs/cron.md).\n";

static const char check_help[] =
	"usage: dbcron cron check EXPR [--seed N] [--format table|json]\n\n"
	"Validate EXPR and explain it in words: prints \"valid (quartz|unix): ...\"\n"
	"and exits 0, or prints why it is invalid and exits 2.  An H needs --seed N\n"
	"(its value comes from a job's seed; cron next --job NAME shows a job's).\n"
	"--format json prints\n"
	"{\"valid\": true, \"dialect\", \"description\"} or {\"valid\": false, \"error\"}\n"
	"(exit 2) on stdout, for a form that checks as it is typed.\n";

static bool is_help(const char *a)
{
	return strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0;
}

/* Positional words are joined with spaces, so an unquoted expression
 * (dbcron cron next 0 0 12 '?' '*' MON-FRI) works too. */
static int append_word(char *expr, size_t cap, const char *w)
{
	size_t n = strlen(expr), k = strlen(w);

	if (n + k + 2 > cap)
		return -1;
	if (n)
		expr[n++] = ' ';
	memcpy(expr + n, w, k + 1);
	return 0;
}

/* --name VALUE or --name=VALUE; returns the value or NULL. */
static const char *opt_value(const char *name, int argc, char **argv, int *i)
{
	size_t n = strlen(name);

	if (strncmp(argv[*i], name, n) != 0)
		return NULL;
	if (argv[*i][n] == '=')
		return argv[*i] + n + 1;
	if (argv[*i][n] == '\0' && *i + 1 < argc)
		return argv[++*i];
	return NULL;
}

/* --seed N: 0 to 2^63 - 1; -1 after printing the usage error. */
static int64_t parse_seed(const char *cmd, const char *v)
{
	char *end;
	errno = 0;
	long long n = strtoll(v, &end, 10);
	if (errno || end == v || *end || n < 0) {
		cli_usage_error(cmd, "--seed must be a whole number 0 or more, not '%s'", v);
		return -1;
	}
	return n;
}

/*
 * --job NAME: the stored job's seed (-1 when it has none), and, when no
 * EXPR was given, its expression (into expr) and zone (into *zone, a copy
 * the caller frees, unless --tz was given); then, without --tz either, the
 * job itself into *keep (its window, --max-runs and calendar apply; the
 * caller clears it) and *use_job true.  0 or an exit status, after
 * printing why.
 */
static int job_cron(const cli_db *db, const char *name, char *expr, size_t cap,
		    const char **zone, char **zone_copy, int64_t *seed, dbcron_job *keep,
		    bool *use_job)
{
	store *s = NULL;
	dbcron_job j;
	dbcron_err err = {0};
	int status = cli_open_store("cron next", db, &s);
	if (status)
		return status;
	dbcron_job_init(&j);
	if (app_job_find(s, name, &j, &err)) {
		status = cli_fail_in("cron next", &err);
		goto out;
	}
	*seed = j.spread_seed;
	if (!expr[0]) {
		if (j.kind != DBCRON_SCHED_CRON) {
			status = cli_usage_error("cron next", "job '%s' has no cron schedule (%s)",
						 name, dbcron_sched_kind_name(j.kind));
			goto out;
		}
		snprintf(expr, cap, "%s", j.spec);
		if (!*zone && (*use_job = true) && dbcron_job_copy(keep, &j))
			status = cli_oom("cron next");
		else if (!*zone && j.tz && !(*zone = *zone_copy = dbcron__strdup(j.tz)))
			status = cli_oom("cron next");
	}
out:
	dbcron_job_clear(&j);
	store_close(s);
	return status;
}

static int print_iso(void *ctx, int64_t t, int32_t offset)
{
	char buf[64];
	dbcron__format_rfc3339(t * 1000, offset, 0, buf, sizeof(buf));
	puts(buf);
	return 0;
}

static int print_epoch(void *ctx, int64_t t, int32_t offset)
{
	printf("%" PRId64 "\n", t);
	return 0;
}

/* --format json: "[" before the first, one object a line, "]" after
 * (cron_next closes it). */
typedef struct json_fires {
	long n;
} json_fires;

static int print_json_fire(void *ctx, int64_t t, int32_t offset)
{
	json_fires *jf = ctx;
	char buf[64];
	dbcron__format_rfc3339(t * 1000, offset, 0, buf, sizeof(buf));
	json_t *o = json_pack("{s:s,s:I,s:i}", "at", buf, "epoch", (json_int_t)t, "offset",
			      (int)offset);
	fputs(jf->n++ ? ",\n" : "[\n", stdout);
	int rc = o ? json_dumpf(o, stdout, JSON_COMPACT | JSON_ENSURE_ASCII) : -1;
	json_decref(o);
	return rc ? -1 : 0;
}

static int cron_next(int argc, char **argv)
{
	char expr[2048] = "", *zone_copy = NULL;
	const char *zone = NULL, *from = NULL, *count_s = NULL, *format = "iso", *job = NULL;
	cli_db db = {0};
	int64_t seed = -1;
	dbcron_err err = {0};

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v;
		if (is_help(a)) {
			fputs(next_help, stdout);
			return CLI_EXIT_OK;
		}
		if ((v = opt_value("--tz", argc, argv, &i)))
			zone = v;
		else if ((v = opt_value("--from", argc, argv, &i)))
			from = v;
		else if ((v = opt_value("--count", argc, argv, &i)))
			count_s = v;
		else if ((v = opt_value("--format", argc, argv, &i)))
			format = v;
		else if ((v = opt_value("--job", argc, argv, &i)))
			job = v;
		else if ((v = opt_value("--seed", argc, argv, &i))) {
			if ((seed = parse_seed("cron next", v)) < 0)
				return CLI_EXIT_USAGE;
		} else if ((v = opt_value("--db-file", argc, argv, &i)))
			db.file = v;
		else if ((v = opt_value("--db", argc, argv, &i)))
			cli_db_set_url(&db, (char *)v);
		else if (a[0] == '-' && a[1] == '-')
			return cli_usage_error("cron next", "unknown or incomplete option '%s'", a);
		else if (append_word(expr, sizeof(expr), a))
			return cli_usage_error("cron next", "expression too long");
	}
	if (!expr[0] && !job)
		return cli_usage_error("cron next", "missing EXPR (or --job NAME)");
	if (job && seed >= 0)
		return cli_usage_error("cron next", "--job and --seed: give one (the job's seed is "
						    "its spread-seed)");
	if (strcmp(format, "iso") && strcmp(format, "epoch") && strcmp(format, "json"))
		return cli_usage_error("cron next", "--format must be iso, epoch or json, not '%s'",
				       format);
	long count = 1;
	if (count_s) {
		char *end;
		errno = 0;
		count = strtol(count_s, &end, 10);
		if (errno || end == count_s || *end || count < 1 || count > MAX_COUNT)
			return cli_usage_error("cron next", "--count must be 1-%d, not '%s'",
					       MAX_COUNT, count_s);
	}
	int64_t now_ms = dbcron__wall_ms(), ms = now_ms;
	if (from && dbcron__parse_time(from, now_ms, &ms, &err))
		return cli_usage_error("cron next", "--from: %s", err.msg);
	int status;
	dbcron_job kept;
	bool use_job = false;
	dbcron_job_init(&kept);
	if (job && (status = job_cron(&db, job, expr, sizeof(expr), &zone, &zone_copy, &seed,
				      &kept, &use_job))) {
		dbcron_job_clear(&kept);
		return status;
	}
	int64_t after = ms >= 0 ? ms / 1000 : -((-ms + 999) / 1000);
	json_fires jf = {0};
	bool json = strcmp(format, "json") == 0;
	status = CLI_EXIT_OK;
	app_fire_fn pf = json ? print_json_fire : strcmp(format, "iso") == 0 ? print_iso : print_epoch;
	if (use_job ? app_job_next(&kept, after * 1000 + 999, count, pf, &jf, &err)
		    : app_cron_next(expr, zone, seed, after, count, pf, &jf, &err))
		status = cli_fail(&err);
	else if (json)
		fputs(jf.n ? "\n]\n" : "[]\n", stdout);
	dbcron_job_clear(&kept);
	dbcron__free(zone_copy);
	if (status)
		return status;
	return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}

static int cron_check(int argc, char **argv)
{
	char expr[2048] = "", desc[1024];
	const char *dialect, *format = "table", *v;
	int64_t seed = -1;
	dbcron_err err = {0};

	for (int i = 1; i < argc; i++) {
		if (is_help(argv[i])) {
			fputs(check_help, stdout);
			return CLI_EXIT_OK;
		}
		if ((v = opt_value("--format", argc, argv, &i))) {
			format = v;
			continue;
		}
		if ((v = opt_value("--seed", argc, argv, &i))) {
			if ((seed = parse_seed("cron check", v)) < 0)
				return CLI_EXIT_USAGE;
			continue;
		}
		if (argv[i][0] == '-' && argv[i][1] == '-')
			return cli_usage_error("cron check", "unknown option '%s'", argv[i]);
		if (append_word(expr, sizeof(expr), argv[i]))
			return cli_usage_error("cron check", "expression too long");
	}
	int fmt = cli_format_of(format);
	if (fmt != CLI_FMT_TABLE && fmt != CLI_FMT_JSON)
		return cli_usage_error("cron check", "--format must be table or json, not '%s'",
				       format);
	if (!expr[0])
		return cli_usage_error("cron check", "missing EXPR");
	int rc = app_cron_check(expr, seed, &dialect, desc, sizeof(desc), &err);
	if (fmt == CLI_FMT_JSON) {
		json_t *o = rc ? json_pack("{s:b,s:s}", "valid", 0, "error", err.msg)
			       : json_pack("{s:b,s:s,s:s}", "valid", 1, "dialect", dialect,
					   "description", desc);
		if (!cli_print_json_line(o))
			return cli_oom("cron check");
		return rc ? cli_status_for(rc) : CLI_EXIT_OK;
	}
	if (rc)
		return cli_fail(&err);
	printf("valid (%s): %s\n", dialect, desc);
	return CLI_EXIT_OK;
}

int cli_cron(int argc, char **argv)
{
	if (argc < 2 || is_help(argv[1])) {
		fputs(cron_help, argc < 2 ? stderr : stdout);
		return argc < 2 ? CLI_EXIT_USAGE : CLI_EXIT_OK;
	}
	if (strcmp(argv[1], "next") == 0)
		return cron_next(argc - 1, argv + 1);
	if (strcmp(argv[1], "check") == 0)
		return cron_check(argc - 1, argv + 1);
	return cli_usage_error("cron", "unknown subcommand '%s' (next or check)", argv[1]);
}
