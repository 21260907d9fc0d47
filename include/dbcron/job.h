/*
 * Jobs and runs as the library, the CLI and every store backend see them.
 *
 * Times are UTC epoch milliseconds in the database's clock; -1 = unset.
 * Strings in these structs are owned by whoever filled them: the free
 * functions below release what a store or parser allocated.
 */
#ifndef DBCRON_JOB_H
#define DBCRON_JOB_H

#include <stdbool.h>
#include <stdint.h>

#include "dbcron/error.h"
#include "dbcron/run.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum dbcron_sched_kind {
	DBCRON_SCHED_CRON = 1,  /* spec: cron expression */
	DBCRON_SCHED_EVERY = 2, /* interval_ms, anchored at anchor_ms */
	DBCRON_SCHED_AFTER = 3, /* interval_ms after the previous run ends */
	DBCRON_SCHED_AT = 4,    /* one instant, at_ms */
	/* no schedule of its own: fires once each time every job named in
	 * spec ("a,b") has succeeded since its previous fire (docs/scheduler.md) */
	DBCRON_SCHED_NEEDS = 5,
} dbcron_sched_kind;

typedef enum dbcron_misfire {
	DBCRON_MISFIRE_FIRE_ONCE = 1,
	DBCRON_MISFIRE_SKIP = 2,
	DBCRON_MISFIRE_CATCH_UP = 3,
} dbcron_misfire;

typedef enum dbcron_overlap {
	DBCRON_OVERLAP_SKIP = 1,
	DBCRON_OVERLAP_ALLOW = 2,
	DBCRON_OVERLAP_QUEUE = 3,
	DBCRON_OVERLAP_REPLACE = 4,
} dbcron_overlap;

typedef enum dbcron_node_loss {
	DBCRON_NODE_LOSS_RETRY = 1,   /* at-least-once */
	DBCRON_NODE_LOSS_ABANDON = 2, /* at-most-once */
} dbcron_node_loss;

typedef enum dbcron_executor {
	DBCRON_EXEC_SHELL = 1,
	DBCRON_EXEC_HANDLER = 2,
	DBCRON_EXEC_HTTP = 3, /* a request: http, header, body, expect */
	DBCRON_EXEC_SQL = 4, /* a statement: sql, on sql_db_file's database */
} dbcron_executor;

/* The run state enum and its transitions live in dbcron/run.h. */

typedef struct dbcron_job {
	int64_t id; /* store-assigned; 0 before insert */
	char *name;
	dbcron_sched_kind kind;
	char *spec;          /* as the user wrote it: cron text, "30s", time */
	int64_t interval_ms; /* EVERY / AFTER */
	int64_t anchor_ms;   /* EVERY: series origin */
	int64_t at_ms;       /* AT */
	char *tz;            /* IANA name; NULL = UTC */
	dbcron_misfire misfire;
	int max_catchup;
	int64_t misfire_threshold_ms;
	dbcron_overlap overlap;
	dbcron_node_loss node_loss;
	/* Each fire runs once on every live node (docs/scheduler.md "Every
	 * node"), not once in the cluster. */
	bool on_every_node;
	int max_retries;
	int64_t retry_base_ms, retry_cap_ms;
	bool retry_jitter;
	int64_t start_jitter_ms; /* a random delay in [0, this) before each run; 0 none */
	int64_t spread_ms;       /* EVERY: a stable offset in [0, this); 0 none */
	int64_t spread_seed;     /* H's and spread's value (docs/cron.md); -1 none */
	int64_t timeout_ms; /* 0 = none */
	/* The window: no fire before start_at, none after end_at (-1: open). */
	int64_t start_at, end_at;
	/* --max-runs: no fire of the schedule after this many were claimed as
	 * runs (0: no limit); runs_fired counts them, written by the claim
	 * with the fires (read-only, like set_aside). */
	int max_runs;
	int64_t runs_fired;
	/* --exclude-calendar: no fire on the calendar's days in the job's zone;
	 * exclude_days is the copy of its days ("YYYY-MM-DD" lines, sorted)
	 * the job was written with, which every planner reads. */
	char *exclude_calendar;
	char *exclude_days;
	dbcron_executor executor;
	char **argv; /* SHELL: NULL-terminated */
	int argc;
	char *handler; /* HANDLER */
	char *arg;
	/* SQL: the statement, with ${param.KEY} placeholders bound as
	 * parameters; and a file on the node's host holding the URL of the
	 * database it runs on (NULL: the scheduler's own database). */
	char *sql;
	char *sql_db_file;
	/* SHELL: what the command runs as (docs/security.md).  Unset (NULL,
	 * 0, -1, false): the node's user and groups, that user's home, a clean
	 * environment with nothing of the job's own, the node's umask. */
	char *user;        /* a user name: initgroups, setgid, setuid before exec */
	char *group;       /* a group name: the primary group instead of the user's */
	char *cwd;         /* absolute directory; NULL: the user's home */
	char **env;        /* "KEY=VALUE" strings, NULL-terminated, envc of them */
	int envc;
	char *env_file;    /* absolute path on the node's host, read at each run */
	int umask;         /* 0-0777; -1: the node's */
	bool inherit_env;  /* start from the node's environment, minus its secrets */
	/* Reactions (docs/reactions.md): targets, one a line ("job:b\nhttps://..."),
	 * acted on when a fire ends failed/timed out/abandoned, succeeded, or
	 * is missed; NULL: none. */
	char *on_failure, *on_success, *on_misfire;
	/* Overdue (docs/reactions.md): no success for this long raises one
	 * event to on_overdue's targets per silent period; 0: never. */
	int64_t max_silence_ms;
	char *on_overdue;
	/* Concurrency caps (issue 28 item 3): the tags the job's runs count
	 * against, one tag a line (NULL: none); a tag with a cap (dbcron tag
	 * set) has at most that many live runs in the whole cluster. */
	char *tags;
	/* Priorities (issue 28 item 4): among fires due at one instant, and
	 * among due fires waiting for a cap's slot, higher starts first
	 * (default 0, -1000..1000). */
	int priority;
	bool paused;
	int64_t next_fire_at; /* -1: no further fire */
	int64_t created_ms, updated_ms;
	/* Why the scheduler set the job aside (it could not plan or decode
	 * it; it does not fire until changed or resumed); NULL when fine.
	 * Read-only: written by the store, never by a put. */
	char *set_aside;
	/* The parameters a trigger may give, "KEY[=DEFAULT],..." (NULL: any
	 * valid key); the defaults also reach its scheduled runs. */
	char *params;
	/* HTTP (docs/exec.md): "METHOD URL"; request headers "Name: value",
	 * one a line; the body; the statuses that mean success ("2xx",
	 * "200,204"; NULL: 2xx); a CA file (NULL: the system's).  URL,
	 * headers and body may hold ${NAME} (from env_file) and
	 * ${param.KEY} placeholders, resolved at each run and never stored. */
	char *http;
	char *http_headers;
	char *http_body;
	char *http_expect;
	char *http_ca_file;
} dbcron_job;

typedef struct dbcron_run {
	int64_t id;
	int64_t job_id;
	char *job_name;
	int64_t fire_at;
	int attempt;
	dbcron_run_state state;
	int64_t due_at; /* when it may start: fire_at, or retry time */
	char *node;
	char *claim_token;
	int64_t started_ms, finished_ms;
	bool has_exit_code;
	int exit_code;
	int64_t missed; /* fire instants this row stands for, beyond itself */
	char *error;
	char *output;
	/* when a cancel was asked for (dbcron runs cancel), <= 0 when none */
	int64_t cancel_requested_ms;
	/* the run's parameters as a JSON object text, NULL when none */
	char *params;
	/* An every-node job's run (docs/scheduler.md "Every node"): the node
	 * it is for, its 0-based index among the live nodes at the claim and
	 * their number.  node_total 0 (for_node NULL): an ordinary run. */
	char *for_node;
	int node_index, node_total;
	/* made by `job backfill` for its fire_at (docs/scheduler.md "Backfill") */
	bool backfill;
} dbcron_run;

/* Defaults a new job gets (misfire fire_once, overlap skip, 3 retries...). */
DBCRON_API void dbcron_job_init(dbcron_job *job);
/* Frees the strings a job owns and resets it with dbcron_job_init(). */
DBCRON_API void dbcron_job_clear(dbcron_job *job);
/* Deep copy; dst must be cleared/initialised.  DBCRON_ENOMEM on failure. */
DBCRON_API int dbcron_job_copy(dbcron_job *dst, const dbcron_job *src);
DBCRON_API void dbcron_run_clear(dbcron_run *run);

/* Names <-> enums.  Names are lower case ("fire_once", "timed_out").
 * The parse functions return -1 for an unknown name. */
DBCRON_API const char *dbcron_run_state_name(dbcron_run_state s);
DBCRON_API int dbcron_run_state_parse(const char *s);
DBCRON_API const char *dbcron_misfire_name(dbcron_misfire m);
DBCRON_API int dbcron_misfire_parse(const char *s);
DBCRON_API const char *dbcron_overlap_name(dbcron_overlap o);
DBCRON_API int dbcron_overlap_parse(const char *s);
DBCRON_API const char *dbcron_node_loss_name(dbcron_node_loss n);
DBCRON_API int dbcron_node_loss_parse(const char *s);
DBCRON_API const char *dbcron_sched_kind_name(dbcron_sched_kind k);

/*
 * Check a job definition for consistency (schedule parses, zone exists,
 * numbers in range, a command or a handler) and fill derived fields
 * (interval_ms, at_ms).  now_ms is used for relative times.
 */
DBCRON_API int dbcron_job_validate(dbcron_job *job, dbcron_err *err);

/*
 * First fire of job strictly after after_ms (epoch ms): cron via the cron
 * engine in the job's zone, EVERY on the anchored series, AT once.  Returns
 * 1 and sets *next, or 0 when there is none.  AFTER jobs are driven by run
 * completions, so this gives after_ms + interval for them.
 */
DBCRON_API int dbcron_job_next_fire(const dbcron_job *job, int64_t after_ms,
				    int64_t *next, dbcron_err *err);

#ifdef __cplusplus
}
#endif
#endif
