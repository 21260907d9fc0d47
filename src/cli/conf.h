/*
 * The CLI's settings: the database, the node's flags and the HTTP address,
 * each from a flag, the environment, the configuration file or the
 * built-in default, in that order of precedence (conf.c).
 */
#ifndef DBCRON_CLI_CONF_H
#define DBCRON_CLI_CONF_H

#include <stdbool.h>

/* The keys, named as the long flags.  New keys go anywhere: the numbers
 * are never stored. */
#define CONF_KEYS(X)                                   \
	X(DB, "db", "DBCRON_DB")                       \
	X(DB_FILE, "db-file", "DBCRON_DB_FILE")        \
	X(NODE_ID, "node-id", NULL)                    \
	X(WORKERS, "workers", NULL)                    \
	X(SLOW_WORKERS, "slow-workers", NULL)          \
	X(CLAIM_BATCH, "claim-batch", NULL)            \
	X(MAX_INFLIGHT, "max-inflight", NULL)          \
	X(PREREAD, "preread", NULL)                    \
	X(CLAIM_STRATEGY, "claim-strategy", NULL)      \
	X(LEASE, "lease", NULL)                        \
	X(HEARTBEAT, "heartbeat", NULL)                \
	X(GRACE, "grace", NULL)                        \
	X(RETENTION, "retention", NULL)                \
	X(LOG_RUNS, "log-runs", NULL)                  \
	X(QUIET, "quiet", NULL)                        \
	X(NOTIFY_SECRET_FILE, "notify-secret-file", NULL) \
	X(HTTP, "http", NULL)                          \
	X(API_TOKEN_FILE, "api-token-file", NULL)      \
	X(HTTP_HOST, "http-host", NULL)                \
	X(HTTP_CERT, "http-cert", NULL)                \
	X(HTTP_KEY, "http-key", NULL)                  \
	X(METRICS_MAX_JOBS, "metrics-max-jobs", NULL)

typedef enum conf_key {
#define CONF_ENUM(id, key, env) CONF_##id,
	CONF_KEYS(CONF_ENUM)
#undef CONF_ENUM
	CONF__COUNT
} conf_key;

/* A command's getopt value for key k (so one switch arm takes them all). */
#define CONF_OPT(k) (0x1000 + (k))
#define CONF_OPT_KEY(c) ((c) >= 0x1000 && (c) < 0x1000 + CONF__COUNT ? (c) - 0x1000 : -1)

typedef enum conf_origin {
	CONF_FROM_DEFAULT,
	CONF_FROM_FILE,
	CONF_FROM_ENV,
	CONF_FROM_FLAG,
} conf_origin;

typedef struct conf_value {
	const char *text; /* NULL: not set anywhere, the built-in default applies */
	conf_origin from;
	/* For messages: "--workers", "DBCRON_DB" or "FILE:LINE: workers";
	 * valid until conf_free. */
	const char *label;
	int line; /* CONF_FROM_FILE: its line in the file */
	const char *file; /* CONF_FROM_FILE: that file (the main one or a drop-in) */
} conf_value;

/* The key's name ("node-id"). */
const char *conf_key_name(conf_key k);
/* The key's environment variable, NULL when it has none. */
const char *conf_key_env(conf_key k);

/* A flag's value (a later one replaces an earlier one, except for a list
 * key, http-host, where each adds to a comma-separated list); text is
 * borrowed and must outlive the command ("true" for a flag without a
 * value). */
void conf_set_flag(conf_key k, const char *text);
/* --config FILE given before the subcommand (borrowed). */
void conf_set_path(const char *path);

/*
 * The effective value of k.  Reads the configuration file the first time
 * a key is asked for that no flag or environment variable gives: --config,
 * else $DBCRON_CONFIG, else /etc/dbcron/dbcron.conf, which may be missing
 * (the other two may not).  Returns 0, or the exit status after printing
 * "dbcron CMD: ..." (the file's errors as FILE:LINE: what).
 */
int conf_get(const char *cmd, conf_key k, conf_value *out);
/* The one of a and b (db and db-file) that the highest level sets, in
 * *which, or a with text NULL when neither is set anywhere; both on one
 * level is an error (exit 2).  Returns 0 or the exit status, as conf_get. */
int conf_get_either(const char *cmd, conf_key a, conf_key b, conf_value *out, conf_key *which);
/* A true/false value (true, false, yes, no, on, off, 1, 0) of v, which is
 * set; prints an error naming v's label and returns 2 when it is neither. */
int conf_bool(const char *cmd, const conf_value *v, bool *out);

/* Reads a file named by --config or $DBCRON_CONFIG now (main, before the
 * command), so that a missing or bad one is an error whatever the command
 * asks for; 0 when none is named.  0 or the exit status, as conf_get. */
int conf_load_named(const char *cmd);
/* Which file conf_get read ("" when none was found) and whether it was
 * named (--config, $DBCRON_CONFIG) or the default; loads it first.  0 or
 * the exit status, as conf_get. */
int conf_file(const char *cmd, const char **path, const char **why);
/* The i-th drop-in read after it (FILE.d, its .conf files in name order), NULL past
 * the last; valid after conf_file until conf_free. */
const char *conf_dropin(size_t i);

/* Frees what conf_get read (main, when the command returns). */
void conf_free(void);

#endif
