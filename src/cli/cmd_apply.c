/*
 * `dbcron job apply`: create, update and (with --prune) delete jobs from a
 * JSON file, and the apply that job import-crontab --apply shares
 * (cli_apply_jobs).  The rules (what a key means, what counts as
 * unchanged, what a dry run reports) are app_apply's;
 * this file bounds the input, prints every refusal and the result.
 *
 * Invariants kept: all or nothing: every entry is checked and the names
 * are found unique before a database is opened, and the write is one
 * transaction, so a refused file leaves the database as it was.  Input is
 * bounded: at most --max-bytes of the file are read (a pipe that never
 * ends costs max + 1 bytes) and at most --max-jobs entries accepted, so
 * no input can make it grow without limit.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app/app.h"
#include "cli/cli.h"
#include "core/alloc.h"

/* At most this many apply errors are printed; the rest are counted. */
#define APPLY_MAX_ERRORS 20
/* Input bounds of job apply (--max-bytes, --max-jobs).  64 MiB of JSON
 * parses into about 1 GB of jansson values (8 MB made 135 MB), which is as
 * much as a scheduler host should be asked to spend on one file; a million
 * jobs is ten times the largest load measured (docs/cli.md). */
#define APPLY_MAX_BYTES ((size_t)64 << 20)
#define APPLY_MAX_JOBS ((size_t)1000000)
/* Above this a limit would overflow the arithmetic of the reader. */
#define APPLY_LIMIT_CAP ((size_t)1 << 40)

static void apply_usage(FILE *f)
{
	fprintf(f,
		"usage: dbcron job apply FILE [--prune] [--dry-run] [--max-bytes N] [--max-jobs N]\n"
		"                        [--no-user-check] [--strict] [--db URL | --db-file PATH]\n\n"
		"Create or update jobs by name from a JSON array of objects (FILE - is stdin).\n"
		"Keys are the long flags of `job add` (\"name\", \"every\", \"retries\", ...;\n"
		"snake_case accepted) plus \"command\": [\"prog\", \"arg\", ...]; the keys only the\n"
		"store sets (\"id\", \"next_fire\", ...) are ignored, so `job list --format json`\n"
		"output applies as it is.  All entries are checked first; then everything is\n"
		"written in one transaction, or nothing.\n"
		"An unchanged schedule keeps its next fire; a job whose entry has no \"paused\"\n"
		"key keeps its paused state.  --prune deletes jobs that are not in FILE.\n"
		"A job given as it is stored counts as unchanged (`job export` output applied\n"
		"to its own database changes nothing).\n"
		"FILE may be an object {\"jobs\": [...], \"tags\": [{\"name\": T, \"max_running\": N}]}:\n"
		"the tags' caps (as `tag set`), written with the jobs; with --prune the caps\n"
		"not given are deleted too.\n"
		"  --dry-run      check everything, print what would change (create NAME,\n"
		"                 change NAME: the fields, delete NAME, unchanged NAME) and\n"
		"                 write nothing\n"
		"  --max-bytes N  read at most N bytes of FILE (default 64M; K, M, G suffixes);\n"
		"                 a larger FILE is refused and nothing is applied\n"
		"  --max-jobs N   at most N jobs in FILE (default 1000000)\n"
		"  --no-user-check  do not look the jobs' \"user\" and \"group\" up on this host\n"
		"                 (they exist only where the nodes run)\n"
		"  --strict       refuse a \"handler\" that is not built in (by default such a\n"
		"                 job is applied with a warning: only nodes of programs that\n"
		"                 register the handler run it)\n" CLI_DB_HELP);
}

/* job apply's arguments. */
typedef struct apply_args {
	cli_common cm;
	const char *file;
	bool prune;
	bool no_user_check;         /* users and groups not looked up */
	bool strict;                /* a handler not built in is an error */
	bool dry_run;               /* print the diff, write nothing */
	size_t max_bytes, max_jobs; /* the input bounds */
} apply_args;

const struct option cli_apply_longopts[] = {
	{"prune", no_argument, NULL, 'p'},
	{"max-bytes", required_argument, NULL, 'B'},
	{"max-jobs", required_argument, NULL, 'J'},
	{"no-user-check", no_argument, NULL, 'U'},
	{"strict", no_argument, NULL, 'S'},
	{"dry-run", no_argument, NULL, 'n'},
	/* job delete's: refused by every other verb */
	{"force", no_argument, NULL, 'F'},
	/* job trigger's: refused by every other verb */
	{"param", required_argument, NULL, 'Q'},
	{NULL, 0, NULL, 0},
};

/* A count for --max-bytes / --max-jobs: digits, for bytes optionally K, M
 * or G (KiB, MiB, GiB); 1 up to APPLY_LIMIT_CAP. */
static int parse_limit(const char *cmd, const char *flag, const char *v, bool units,
		       size_t *out)
{
	char *end;
	errno = 0;
	unsigned long long x = v[0] >= '0' && v[0] <= '9' ? strtoull(v, &end, 10) : 0;
	unsigned shift = 0;
	if (x && !errno && units && *end && !end[1])
		shift = *end == 'K' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : 0;
	if (shift)
		end++;
	if (!x || errno || *end || x > (unsigned long long)(APPLY_LIMIT_CAP >> shift))
		return cli_usage_error(cmd, "%s '%s': expected a whole number from 1 to %zu%s", flag,
				       v, APPLY_LIMIT_CAP, units ? " (or with K, M, G: KiB, MiB, GiB)" : "");
	*out = (size_t)x << shift;
	return 0;
}

static int apply_opt(void *ctx, int c, char *arg)
{
	apply_args *a = ctx;
	switch (c) {
	case 'p':
		a->prune = true;
		return 0;
	case 'U':
		a->no_user_check = true;
		return 0;
	case 'S':
		a->strict = true;
		return 0;
	case 'n':
		a->dry_run = true;
		return 0;
	case 'B':
		return parse_limit("job apply", "--max-bytes", arg, true, &a->max_bytes);
	case 'J':
		return parse_limit("job apply", "--max-jobs", arg, false, &a->max_jobs);
	case 'F':
		return cli_usage_error("job apply", "unknown option '--force'");
	case 'Q':
		return cli_usage_error("job apply", "unknown option '--param'");
	default: /* --format, in the table of every job subcommand */
		return cli_usage_error("job apply", "unknown option '--format'");
	}
}

/* Returns -1 to go on, else an exit status. */
static int parse_apply(int argc, char **argv, apply_args *a)
{
	const cli_spec sp = {.cmd = "job apply",
			     .common = CLI_COMMON_DB | CLI_COMMON_FORMAT | CLI_COMMON_HELP,
			     .own = cli_apply_longopts, .usage = apply_usage, .own_opt = apply_opt,
			     .ctx = a};
	cliopt o;

	memset(a, 0, sizeof(*a));
	a->max_bytes = APPLY_MAX_BYTES;
	a->max_jobs = APPLY_MAX_JOBS;
	int status = cli_parse(&sp, &o, &a->cm, argc, argv);
	if (status >= 0)
		return status;
	cliopt_rest_as_pos(&o);
	if (o.npos < 1)
		return cli_usage_error("job apply", "missing the FILE");
	if (o.npos > 1)
		return cli_usage_error("job apply", "unexpected argument '%s'", o.pos[1]);
	a->file = o.pos[0];
	return -1;
}

typedef struct apply_ctx {
	const char *file;
	size_t nerr;
	const cli_db *db; /* opened once every entry passed its checks */
	store *s;
	int status; /* cli_open_store's, when it refused */
} apply_ctx;

/* app_apply_opts.open: the database, only after the input was found good
 * (a refused file opens nothing, so never creates a SQLite file). */
static int apply_open(void *ctx, store **s)
{
	apply_ctx *ac = ctx;
	if ((ac->status = cli_open_store("job apply", ac->db, &ac->s)))
		return -1;
	*s = ac->s;
	return 0;
}

/* app_entry_err_fn: one refused entry on stderr, at most APPLY_MAX_ERRORS. */
static void apply_error(void *ctx, size_t idx, const char *name, const char *msg)
{
	apply_ctx *ac = ctx;
	if (++ac->nerr > APPLY_MAX_ERRORS)
		return;
	if (name)
		fprintf(stderr, "dbcron job apply: %s: job #%zu ('%s'): %s\n", ac->file, idx + 1,
			name, msg);
	else
		fprintf(stderr, "dbcron job apply: %s: job #%zu: %s\n", ac->file, idx + 1, msg);
}

/* app_apply_opts.on_warn: an applied entry worth a word, on stderr. */
static void apply_warning(void *ctx, size_t idx, const char *name, const char *msg)
{
	apply_ctx *ac = ctx;
	fprintf(stderr, "dbcron job apply: %s: job #%zu ('%s'): warning: %s\n", ac->file, idx + 1,
		name ? name : "", msg);
}

/* "64 MiB" for limits that are whole KiB/MiB/GiB, else "N bytes". */
static const char *size_text(size_t n, char *buf, size_t cap)
{
	if (n >= (1u << 30) && n % (1u << 30) == 0)
		snprintf(buf, cap, "%zu GiB", n >> 30);
	else if (n >= (1u << 20) && n % (1u << 20) == 0)
		snprintf(buf, cap, "%zu MiB", n >> 20);
	else if (n >= (1u << 10) && n % (1u << 10) == 0)
		snprintf(buf, cap, "%zu KiB", n >> 10);
	else
		snprintf(buf, cap, "%zu bytes", n);
	return buf;
}

/*
 * All of fd into *out (owned by the caller), but never more than max
 * bytes: reading stops at max + 1, so an endless stream (a pipe, /dev/zero,
 * a file still growing) costs at most max + 1 bytes of memory.  Returns
 * 0, or -1 with errno set, or 1 when the input is larger than max.
 */
static int read_bounded(int fd, size_t max, size_t hint, char **out, size_t *len)
{
	size_t cap = hint && hint < max ? hint + 1 : (max < 65536 ? max + 1 : 65536);
	size_t n = 0;
	char *buf = dbcron__malloc(cap);
	int rc = -1;

	*out = NULL;
	*len = 0;
	if (!buf)
		return errno = ENOMEM, -1;
	for (;;) {
		if (n == cap) {
			if (cap > max) {
				rc = 1; /* max + 1 bytes read: over the limit */
				goto out_free;
			}
			size_t want = cap * 2 > max + 1 ? max + 1 : cap * 2;
			char *p = dbcron__realloc(buf, want);
			if (!p) {
				errno = ENOMEM;
				goto out_free;
			}
			buf = p;
			cap = want;
		}
		ssize_t k = read(fd, buf + n, cap - n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			goto out_free;
		if (k == 0)
			break;
		n += (size_t)k;
	}
	*out = buf;
	*len = n;
	return 0;
out_free:
	dbcron__free(buf);
	return rc;
}

/* FILE ("-": stdin) as a JSON array of at most a->max_jobs entries, read
 * with at most a->max_bytes bytes.  NULL (message printed, *status set)
 * when it cannot be had; nothing has been written then. */
static json_t *apply_load(const char *file, const char *shown, const apply_args *a,
			  int *status)
{
	json_error_t jerr;
	int fd = STDIN_FILENO;
	json_t *root = NULL;
	char *text = NULL, sz[32];
	size_t len = 0, hint = 0;
	struct stat st;

	*status = CLI_EXIT_USAGE;
	if (strcmp(file, "-") != 0) {
		fd = open(file, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			fprintf(stderr, "dbcron job apply: %s: %s\n", file, strerror(errno));
			return NULL;
		}
	}
	bool known = fstat(fd, &st) == 0;
	if (known && S_ISDIR(st.st_mode)) {
		fprintf(stderr, "dbcron job apply: %s: %s\n", shown, strerror(EISDIR));
		goto out_close;
	}
	/* A regular file says its size: refuse at once, read in one go. */
	if (known && S_ISREG(st.st_mode) && st.st_size > 0) {
		if ((uintmax_t)st.st_size > a->max_bytes)
			goto out_too_big;
		hint = (size_t)st.st_size;
	}
	int r = read_bounded(fd, a->max_bytes, hint, &text, &len);
	if (r > 0)
		goto out_too_big;
	if (r < 0) {
		if (errno == ENOMEM)
			*status = cli_oom("job apply");
		else
			fprintf(stderr, "dbcron job apply: %s: %s\n", shown, strerror(errno));
		goto out_close;
	}
	root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	dbcron__free(text);
	if (!root) {
		fprintf(stderr, "dbcron job apply: %s:%d:%d: %s\n", shown, jerr.line,
			jerr.column, jerr.text);
		goto out_close;
	}
	json_t *jobs, *tags;
	dbcron_err derr = {0};
	if (app_apply_doc(root, &jobs, &tags, &derr)) {
		fprintf(stderr, "dbcron job apply: %s: %s\n", shown, derr.msg);
		goto out_decref;
	}
	if (json_array_size(jobs) > a->max_jobs) {
		fprintf(stderr,
			"dbcron job apply: %s: %zu jobs, more than the limit of %zu (--max-jobs N raises it); nothing applied\n",
			shown, json_array_size(jobs), a->max_jobs);
		goto out_decref;
	}
	if (fd != STDIN_FILENO)
		close(fd);
	return root;

out_too_big:
	fprintf(stderr,
		"dbcron job apply: %s: larger than the limit of %s (--max-bytes N raises it); nothing applied\n",
		shown, size_text(a->max_bytes, sz, sizeof(sz)));
	goto out_close;
out_decref:
	json_decref(root);
out_close:
	if (fd != STDIN_FILENO)
		close(fd);
	return NULL;
}

/* One line per name of a dry run's diff list: "create  NAME". */
static void print_names(const char *verb, json_t *names, json_t *fields)
{
	for (size_t i = 0; i < json_array_size(names); i++) {
		const char *name = json_string_value(json_array_get(names, i));
		json_t *keys = json_object_get(fields, name);
		printf("%-9s %s", verb, name);
		for (size_t k = 0; k < json_array_size(keys); k++)
			printf("%s%s", k ? ", " : ": ", json_string_value(json_array_get(keys, k)));
		fputc('\n', stdout);
	}
}

/* "cap       heavy: none -> 2", "uncap     old". */
static void print_caps(json_t *c)
{
	size_t i;
	json_t *v;
	json_array_foreach(json_object_get(c, "set"), i, v) {
		json_t *before = json_object_get(v, "before");
		printf("%-9s %s: ", "cap", json_string_value(json_object_get(v, "name")));
		if (json_is_integer(before))
			printf("%" JSON_INTEGER_FORMAT, json_integer_value(before));
		else
			fputs("none", stdout);
		printf(" -> %" JSON_INTEGER_FORMAT "\n",
		       json_integer_value(json_object_get(v, "after")));
	}
	json_array_foreach(json_object_get(c, "delete"), i, v)
		printf("%-9s %s\n", "uncap", json_string_value(v));
}

static void print_diff(json_t *d)
{
	json_t *f = json_object_get(d, "fields"), *caps = json_object_get(d, "caps");
	print_caps(caps);
	print_names("create", json_object_get(d, "create"), NULL);
	print_names("change", json_object_get(d, "update"), f);
	print_names("delete", json_object_get(d, "delete"), NULL);
	print_names("unchanged", json_object_get(d, "unchanged"), NULL);
	printf("dry run: %zu to create, %zu to change, %zu to delete, %zu unchanged",
	       json_array_size(json_object_get(d, "create")),
	       json_array_size(json_object_get(d, "update")),
	       json_array_size(json_object_get(d, "delete")),
	       json_array_size(json_object_get(d, "unchanged")));
	if (caps)
		printf("; caps: %zu to set, %zu to delete",
		       json_array_size(json_object_get(caps, "set")),
		       json_array_size(json_object_get(caps, "delete")));
	puts("; nothing written");
}

int cli_apply_jobs(const char *shown, json_t *root, const cli_db *db, bool user_check,
		   bool prune, bool strict, bool dry_run)
{
	apply_ctx ac = {.file = shown, .db = db};
	app_apply_opts opts = {.prune = prune, .user_check = user_check, .strict = strict,
			       .dry_run = dry_run, .on_warn = apply_warning, .open = apply_open};
	app_apply_result r = {0};
	dbcron_err err = {0};
	char warning[512];
	json_t *jobs;
	int status;

	int rc = app_apply_doc(root, &jobs, &opts.tags, &err);
	if (!rc)
		rc = app_apply(NULL, jobs, &opts, apply_error, &ac, &r, warning, sizeof(warning),
			       &err);
	json_decref(root);
	if (rc < 0) {
		status = ac.status;
		goto out_free;
	}
	if (rc == DBCRON_EINVAL && r.nerr)
		goto out_report;
	if (rc) {
		status = err.code == DBCRON_ENOMEM ? cli_oom("job apply") : cli_fail_in("job apply", &err);
		goto out_free;
	}
	if (dry_run) {
		print_diff(r.diff);
		json_decref(r.diff);
		status = CLI_EXIT_OK;
		goto out_free;
	}
	if (warning[0])
		fprintf(stderr, "dbcron job apply: warning: %s\n", warning);
	printf("applied: %zu created, %zu updated, %zu deleted", r.created, r.updated, r.deleted);
	if (r.unchanged)
		printf("; %zu unchanged", r.unchanged);
	if (r.caps_set || r.caps_deleted)
		printf("; caps: %zu set, %zu deleted", r.caps_set, r.caps_deleted);
	fputc('\n', stdout);
	status = CLI_EXIT_OK;
	goto out_free;

out_report:
	if (ac.nerr > APPLY_MAX_ERRORS)
		fprintf(stderr, "dbcron job apply: %s: %zu more errors not shown\n", ac.file,
			ac.nerr - APPLY_MAX_ERRORS);
	fprintf(stderr, "dbcron job apply: %s: nothing applied (%zu error%s)\n", ac.file,
		ac.nerr, ac.nerr == 1 ? "" : "s");
	status = CLI_EXIT_USAGE;
out_free:
	store_close(ac.s);
	return status;
}

int cli_job_apply(int argc, char **argv)
{
	apply_args a;
	int status = parse_apply(argc, argv, &a);
	if (status >= 0)
		return status;
	const char *shown = strcmp(a.file, "-") ? a.file : "<stdin>";
	json_t *root = apply_load(a.file, shown, &a, &status);
	if (!root)
		return status;
	return cli_apply_jobs(shown, root, &a.cm.db, !a.no_user_check, a.prune, a.strict,
			      a.dry_run);
}
