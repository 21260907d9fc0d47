/*
 * Job definitions as the user writes them: the long flags of `job add` and
 * the keys of a `job apply` file are one table, so the two can never
 * disagree.  Also the option loop every CLI command shares.
 */
#ifndef DBCRON_CLI_JOBDEF_H
#define DBCRON_CLI_JOBDEF_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "dbcron/error.h"
#include "dbcron/job.h"

typedef enum jobdef_type {
	JD_STR = 1, /* free text or a name */
	JD_INT,     /* integer */
	JD_BOOL,    /* flag without value on the CLI; true/false in JSON */
	JD_DUR,     /* duration text: "500ms", "30s", "1h30m" */
	JD_ARGV,    /* array of strings (JSON "command"; CLI after "--") */
} jobdef_type;

typedef enum jobdef_id {
	JK_NAME,
	JK_CRON,
	JK_EVERY,
	JK_AFTER,
	JK_AT,
	JK_TZ,
	JK_MISFIRE,
	JK_MAX_CATCHUP,
	JK_MISFIRE_THRESHOLD,
	JK_OVERLAP,
	JK_NODE_LOSS,
	JK_RETRIES,
	JK_RETRY_BASE,
	JK_RETRY_CAP,
	JK_JITTER,
	JK_TIMEOUT,
	JK_PAUSED,
	JK_HANDLER,
	JK_ARG,
	JK_COMMAND,
	JK__COUNT
} jobdef_id;

typedef struct jobdef_key {
	jobdef_id id;
	const char *name;  /* long flag / JSON key: "max-catchup" */
	const char *snake; /* accepted JSON variant: "max_catchup" (or NULL) */
	jobdef_type type;
} jobdef_key;

/* One definition being built.  Owns job's strings; jobdef_clear frees. */
typedef struct jobdef {
	dbcron_job job;
	bool cli;             /* name keys "--every" (CLI) or "key 'every'" */
	bool seen[JK__COUNT]; /* which keys were given */
} jobdef;

/* The key table, terminated by a NULL name. */
extern const jobdef_key jobdef_keys[];

void jobdef_init(jobdef *d, bool cli);
void jobdef_clear(jobdef *d);
/* "--every" or "key 'every'" into buf. */
const char *jobdef_label(const jobdef *d, const jobdef_key *k, char *buf,
			 size_t len);
/* By long name or snake_case variant; NULL when unknown. */
const jobdef_key *jobdef_find(const char *name);
const jobdef_key *jobdef_key_of(jobdef_id id);

/*
 * Set one key.  Text for JD_STR/JD_DUR/JD_INT (parsed), or the typed
 * setters below.  Checks the value alone (syntax, zone exists, handler
 * exists); errors say which key and which value, DBCRON_EINVAL/EPARSE.
 */
int jobdef_set_text(jobdef *d, const jobdef_key *k, const char *value,
		    dbcron_err *err);
int jobdef_set_int(jobdef *d, const jobdef_key *k, long long v,
		   dbcron_err *err);
int jobdef_set_bool(jobdef *d, const jobdef_key *k, bool v, dbcron_err *err);
/* Copies argv[0..argc). */
int jobdef_set_argv(jobdef *d, char *const *argv, int argc, dbcron_err *err);

/*
 * Checks that need the whole definition but no clock: exactly one
 * schedule, a command or a handler (not both), --arg only with --handler.
 */
int jobdef_check(jobdef *d, dbcron_err *err);

/*
 * Resolve against the database clock and validate: --at times, the EVERY
 * anchor (now) and next_fire_at (EVERY: anchor + interval; AFTER: now +
 * interval; AT: the instant, even when past; CRON: next after now).
 * prev (may be NULL) is the stored job of the same name: when its schedule
 * is the same text, its anchor, instant and next fire are kept, so that
 * re-applying a file moves nothing; when "paused" was not given, its
 * paused state is kept.
 */
int jobdef_finish(jobdef *d, int64_t now_ms, const dbcron_job *prev,
		  dbcron_err *err);

/* The schedule as one word and its text: "every 30s". */
const char *jobdef_schedule_text(const dbcron_job *job, char *buf,
				 size_t len);

/* RFC 3339 in UTC, with milliseconds only when they are not zero; "-" for
 * unset (-1; dbcron has no times before 1970). */
const char *cli_time(int64_t ms, char *buf, size_t len);

/*
 * The option loop every command uses: GNU getopt_long in "+" order, so
 * options and positionals may interleave and "--" ends the options.
 * Positionals are collected in pos (npos counts them all); after
 * "--", rest/nrest are the remaining words and dashdash is true.
 */
#define CLIOPT_MAXPOS 4
typedef struct cliopt {
	const char *cmd; /* "job add", for messages */
	char *pos[CLIOPT_MAXPOS]; /* the first positionals */
	int npos;                 /* how many there were (may exceed MAXPOS) */
	char **rest;
	int nrest;
	bool dashdash;
} cliopt;

/* Before the first cliopt_next of a command. */
void cliopt_reset(void);
/* Next option: its value, -1 at the end, or '?' after printing a usage
 * error for an unknown option or a missing value. */
int cliopt_next(cliopt *o, int argc, char **argv, const char *optstring,
		const struct option *longs);

/* Runs collected from store listings (cmd_view.c), shared with job show. */
typedef struct cli_run_vec {
	dbcron_run *v;
	size_t n, cap;
	int rc; /* DBCRON_ENOMEM when a copy failed */
} cli_run_vec;

/* store_run_cb: deep-copies the run into a cli_run_vec (ctx). */
int cli_collect_run(void *ctx, const dbcron_run *run);
void cli_run_vec_free(cli_run_vec *rv);
/* The run as a JSON object (new reference; NULL on OOM). */
struct json_t *cli_run_json(const dbcron_run *r);
/* Aligned table, RFC 3339 times; with_job adds the JOB column. */
void cli_print_runs_table(FILE *f, const dbcron_run *runs, size_t n,
			  bool with_job);

#endif
