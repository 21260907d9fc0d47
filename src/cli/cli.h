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
int cli_init(int argc, char **argv);  /* cmd_job.c */
int cli_job(int argc, char **argv);   /* cmd_job.c */
int cli_runs(int argc, char **argv);  /* cmd_view.c */
int cli_nodes(int argc, char **argv); /* cmd_view.c */
int cli_node(int argc, char **argv);  /* cmd_node.c */
int cli_lock(int argc, char **argv);  /* cmd_lock.c */
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
struct model_jobdef;
size_t cli_jobdef_longopts(struct option *out, bool negations);
int cli_jobdef_opt(struct model_jobdef *d, int c, const char *arg, bool *handled,
		   dbcron_err *err);
/* job import-crontab (cmd_crontab.c); argv[0] is "import-crontab". */
int cli_job_import_crontab(int argc, char **argv);

/*
 * Where the database is: --db URL or --db-file PATH, which every database
 * command takes (the long options "db" and "db-file").  url is never argv
 * itself: cli_db_set_url keeps a copy and overwrites the value in argv, so
 * /proc/PID/cmdline and ps no longer show it to other users or to the
 * jobs a node starts (they could read it in the short time before).
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

/*
 * The option loop every command uses (main.c): GNU getopt_long in "+"
 * order, so options and positionals may interleave and "--" ends the
 * options.  Positionals are collected in pos (npos counts them all); after
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

/* store_run_cb: deep-copies the run into a cli_run_vec (ctx), which owns
 * the copies until cli_run_vec_free. */
int cli_collect_run(void *ctx, const dbcron_run *run);
void cli_run_vec_free(cli_run_vec *rv);
/* Aligned table, RFC 3339 times; with_job adds the JOB column. */
void cli_print_runs_table(FILE *f, const dbcron_run *runs, size_t n,
			  bool with_job);

/*
 * job apply's checks and its one transaction over root, a JSON array of
 * job objects (stolen); shown names the input in messages.  Prints what
 * it did or every error; returns the exit status.  dry_run prints what
 * would change (created, changed with its fields, deleted) and writes
 * nothing.  (cmd_job.c)
 */
int cli_apply_jobs(const char *shown, json_t *root, const cli_db *db, bool user_check,
		   bool prune, bool strict, bool dry_run);

#endif
