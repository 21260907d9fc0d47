/*
 * The dbcron command line: one binary, subcommands in their own files.
 * Exit statuses: 0 ok, 1 runtime failure (database, I/O), 2 bad input or
 * usage, 75 lock held by another owner (dbcron lock), 76 lease lost.
 */
#ifndef DBCRON_CLI_H
#define DBCRON_CLI_H

#include <getopt.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "dbcron/error.h"
#include "store/store.h"

struct conf_value;
struct dbcron_node_config;
struct http_config;

#define CLI_EXIT_OK 0
#define CLI_EXIT_FAIL 1
#define CLI_EXIT_USAGE 2
#define CLI_EXIT_LOCKED 75 /* EX_TEMPFAIL: try again later */
#define CLI_EXIT_LOST 76

/* Each takes argv after the subcommand name (argv[0] is the subcommand). */
int cli_cron(int argc, char **argv);  /* cmd_cron.c */
int cli_init(int argc, char **argv);  /* cmd_init.c */
int cli_job(int argc, char **argv);   /* cmd_job.c */
int cli_runs(int argc, char **argv);  /* cmd_runs.c */
int cli_audit(int argc, char **argv); /* cmd_audit.c */
int cli_nodes(int argc, char **argv); /* cmd_nodes.c */
int cli_calendar(int argc, char **argv); /* cmd_calendar.c */
int cli_events(int argc, char **argv); /* cmd_events.c */
int cli_node(int argc, char **argv);  /* cmd_node.c */
int cli_lock(int argc, char **argv);  /* cmd_lock.c */
int cli_tag(int argc, char **argv);   /* cmd_tag.c */
int cli_locks(int argc, char **argv); /* cmd_lock.c */
int cli_serve(int argc, char **argv); /* cmd_serve.c */
int cli_config(int argc, char **argv); /* cmd_config.c */
/* job set, rename and export (cmd_jobedit.c); argv[0] is sub.  -1 when
 * sub is none of them. */
int cli_job_edit(const char *sub, int argc, char **argv);

/*
 * The long options of the definition keys (cmd_jobedit.c), shared by job
 * add and job set: one per key of model_jobdef_keys but the name and the
 * command (which goes after --), value CLI_OPT_KEY + the key id; with
 * negations also --no-KEY for each true/false key, value CLI_OPT_NOKEY +
 * id.  Writes into out (room for 2 * MODEL_JK__COUNT) and returns how
 * many.  cli_jobdef_opt sets the key of such a value c in d (*handled
 * false when c is not one of them).
 */
#define CLI_OPT_KEY 2000
#define CLI_OPT_NOKEY 3000
/* "--param" in job add and set: refused (cli_jobdef_longopts says why) */
#define CLI_OPT_PARAM_REFUSED 3999
/* "--body-file PATH": an HTTP job's body read from a file, now */
#define CLI_OPT_BODY_FILE 3998
struct model_jobdef;
size_t cli_jobdef_longopts(struct option *out, bool negations);
int cli_jobdef_opt(struct model_jobdef *d, int c, const char *arg, bool *handled,
		   dbcron_err *err);
/* job import-crontab (cmd_crontab.c); argv[0] is "import-crontab". */
int cli_job_import_crontab(int argc, char **argv);
/* job apply (cmd_apply.c); argv[0] is "apply". */
int cli_job_apply(int argc, char **argv);
/* job backfill (cmd_backfill.c) */
int cli_job_backfill(int argc, char **argv);

/*
 * Where the database is: --db URL or --db-file PATH, which every database
 * command takes (the long options "db" and "db-file").  url is never argv
 * itself: cli_db_set_url keeps a copy and overwrites the value in argv, so
 * /proc/PID/cmdline and ps do not show it to other users or to the
 * jobs a node starts (they could read it in the moment before).
 */
typedef struct cli_db {
	const char *url;  /* --db, a copy owned by main.c */
	const char *file; /* --db-file */
} cli_db;

#define CLI_DB_HELP                                                                        \
	"  --db URL         database: sqlite:PATH, postgresql://... or key=value conninfo\n"   \
	"  --db-file PATH   read the database URL from PATH (one line), so it is not on the\n"  \
	"                   command line; default $DBCRON_DB, else $DBCRON_DB_FILE, else db\n"  \
	"                   or db-file of the configuration file (dbcron config --help), else\n" \
	"                   sqlite:./dbcron.db\n"

/* --db VALUE: copies VALUE and overwrites it in argv with "***". */
void cli_db_set_url(cli_db *d, char *value);
/*
 * The URL: --db or --db-file (the command's, else before the command),
 * else $DBCRON_DB or $DBCRON_DB_FILE, else the configuration file's db or
 * db-file (conf.h), else sqlite:./dbcron.db.  Both of a pair on one level,
 * or an empty value, is an error.  A file
 * holds the URL on one line (surrounding white space ignored) and is never
 * quoted in messages.  NULL after printing "dbcron CMD: ..." with the exit
 * status in *status; the text lives until the command returns to main.
 */
const char *cli_db_url(const char *cmd, const cli_db *d, int *status);
/* cli_db_url, also telling where the URL came from: *from is db's or
 * db-file's value (text NULL for the built-in default). */
const char *cli_db_url_from(const char *cmd, const cli_db *d, struct conf_value *from,
			    int *status);
/* cli_db_url, then open the store and check its schema; prints the error
 * and returns the exit status on failure (0 on success). */
int cli_open_store(const char *cmd, const cli_db *d, store **out);
/*
 * The settings of `dbcron node` (and of its HTTP server) and of `dbcron
 * serve`'s server from their flags (conf_set_flag), the configuration
 * file or the defaults already in cfg and hc, checked as the node checks
 * them; messages name the flag or FILE:LINE: key.  0 or the exit status.
 * (cmd_node.c)
 */
int cli_node_settings(const char *cmd, struct dbcron_node_config *cfg, struct http_config *hc);
int cli_http_settings(const char *cmd, struct http_config *hc);
/* Print "dbcron: <msg>" to stderr; returns the exit status for code. */
int cli_fail(const dbcron_err *err);
int cli_usage_error(const char *cmd, const char *fmt, ...) DBCRON_PRINTF(2, 3);
/* Exit status for an error code: 2 for bad input, 1 otherwise. */
int cli_status_for(int code);
/* "dbcron CMD: <msg>" with the exit status for err's code. */
int cli_fail_in(const char *cmd, const dbcron_err *err);
/* "dbcron CMD: out of memory", exit status 1. */
int cli_oom(const char *cmd);

/*
 * The options (opts.c).  The options every database command shares are
 * declared once, in opts.c's table: a command names the ones it takes
 * (CLI_COMMON_*) and lists only its own; cli_parse runs the one option
 * loop: GNU getopt_long in "+" order, so options and positionals may
 * interleave and "--" ends the options.  Positionals are collected in
 * cliopt's pos (npos counts them all); after "--", rest/nrest are the
 * remaining words and dashdash is true.
 */
#define CLI_COMMON_DB 0x1u     /* --db URL, --db-file PATH */
#define CLI_COMMON_FORMAT 0x2u /* --format WORD */
#define CLI_COMMON_HELP 0x4u   /* --help, and -h */
/* Their getopt values: past every short option, below CLI_OPT_KEY and
 * conf.h's CONF_OPT range. */
#define CLI_OPT_DB 1000
#define CLI_OPT_DB_FILE 1001
#define CLI_OPT_FORMAT 1002
#define CLI_OPT_HELP 'h'
/* Room for one command's whole table (job set's is the largest). */
#define CLI_MAX_LONGOPTS 128

/* What the shared options said. */
typedef struct cli_common {
	cli_db db;
	const char *format; /* --format's word, NULL when not given */
} cli_common;

#define CLIOPT_MAXPOS 4
typedef struct cliopt {
	const char *cmd; /* "job add", for messages */
	char *pos[CLIOPT_MAXPOS]; /* the first positionals */
	int npos;                 /* how many there were (may exceed MAXPOS) */
	char **rest;
	int nrest;
	bool dashdash;
} cliopt;

/* One command's options for cli_parse. */
typedef struct cli_spec {
	const char *cmd;          /* "job add", for messages */
	unsigned common;          /* the CLI_COMMON_* options it takes */
	const struct option *own; /* its own, NULL-terminated; NULL: none */
	void (*usage)(FILE *);    /* --help prints it on stdout, exit 0 */
	/* --format's words, NULL-terminated; NULL: the word goes to own_opt
	 * as CLI_OPT_FORMAT, for a command whose rule is its own */
	const char *const *formats;
	/* One of own's options (arg: its value, or NULL): 0 goes on, else
	 * the exit status to stop with, after printing why. */
	int (*own_opt)(void *ctx, int c, char *arg);
	void *ctx;
} cli_spec;

/*
 * The option loop of a command: the shared options into *cm (--format
 * checked against sp->formats), --help answered, every other option to
 * sp->own_opt, positionals into *o.  -1 when the command goes on, else
 * its exit status (0 after --help, 2 after a usage error, printed).
 */
/* The argument after the current option's value (an option that takes two,
 * `--http METHOD URL`), consumed; NULL at the end of argv.  Only from an
 * own_opt callback of cli_parse. */
char *cli_take_arg(void);
int cli_parse(const cli_spec *sp, cliopt *o, cli_common *cm, int argc, char **argv);
/* "--" before a positional that starts with '-': the words after it
 * count as positionals. */
void cliopt_rest_as_pos(cliopt *o);
/* A command that takes no positionals: 0, or the usage error's status. */
int cliopt_no_pos(const cliopt *o);

/* For the commands with a getopt loop of their own (lock, locks, node):
 * the shared options of mask, then own, into out (room for cap, with the
 * terminator); how many, or -1 when they do not fit. */
int cli_longopts(struct option *out, size_t cap, unsigned mask, const struct option *own);
/* --db, --db-file or --format into *cm: false when c is none of them. */
bool cli_common_opt(cli_common *cm, int c, char *arg);

/* --format's words as a value; NULL is the table. */
enum { CLI_FMT_TABLE, CLI_FMT_CSV, CLI_FMT_JSON };
/* CLI_FMT_*, or -1 for a word that is none of them. */
int cli_format_of(const char *word);
/* {"table", "json", NULL}: the words of a command that prints one result. */
extern const char *const cli_formats_table_json[];

/* Aligned table, RFC 3339 times; with_job adds the JOB column. */
void cli_print_runs_table(FILE *f, const dbcron_run *runs, size_t n,
			  bool with_job);

/* The listings' csv (csv.c): one RFC 4180 field (NULL: empty), and epoch
 * milliseconds (negative: empty). */
void cli_csv_field(FILE *f, const char *s);
void cli_csv_ms(FILE *f, int64_t ms);
/* `--format json` of a command that is not a listing: v (stolen) on one
 * line of stdout.  false when v is NULL (out of memory) or the write
 * failed. */
bool cli_print_json_line(json_t *v);

/*
 * job apply's checks and its one transaction over root, a JSON array of
 * job objects (stolen); shown names the input in messages.  Prints what
 * it did or every error; returns the exit status.  dry_run prints what
 * would change (created, changed with its fields, deleted) and writes
 * nothing.  (cmd_apply.c, shared with job import-crontab --apply)
 */
int cli_apply_jobs(const char *shown, json_t *root, const cli_db *db, bool user_check,
		   bool prune, bool strict, bool dry_run);
/* job apply's own options (--prune, --max-bytes, ...), NULL-terminated.
 * The other job subcommands of cmd_job.c have them in their tables too,
 * and refuse each by name. */
extern const struct option cli_apply_longopts[];

#endif
