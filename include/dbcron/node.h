/*
 * A scheduler node: claims due fires from the database, starts each at its
 * instant, runs it on a worker pool and records the outcome.  Embed it in a
 * program (register handlers first) or run `dbcron node`.
 */
#ifndef DBCRON_NODE_H
#define DBCRON_NODE_H

#include <stdbool.h>
#include <stdint.h>

#include "dbcron/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dbcron_node_config {
	const char *db_url;     /* required, unless db_file is given */
	const char *node_id;    /* NULL: "<hostname>-<pid>" */
	int workers;            /* fast pool threads; default 8 */
	int slow_workers;       /* slow pool threads; default 2 */
	int claim_batch;        /* most fires per claim; default 200 */
	int max_inflight;       /* claimed but unfinished; default 5000 */
	int64_t preread_ms;     /* claim fires due within; default 1500 (claims
				 * then land mid-second, away from the second
				 * boundaries where cron fires cluster) */
	int64_t claim_interval_ms; /* poll period; default 250 */
	int64_t lease_ms;       /* node lease; default 3000 */
	int64_t heartbeat_ms;   /* default 1000 */
	int64_t flush_ms;       /* start/completion batching; default 50 */
	int64_t grace_ms;       /* shutdown wait for running jobs; default 10000 */
	int64_t kill_grace_ms;  /* SIGTERM -> SIGKILL; default 2000 */
	bool log_runs;          /* a log line for every run state change */
	int64_t retention_ms;   /* prune finished runs older; default 30 days,
				 * -1 keeps them forever */
	int64_t maintenance_ms; /* how often a node tries the maintenance lease;
				 * default 60000 */
	/* How claims keep out of each other's way: DBCRON_CLAIM_PER_ROW
	 * (default; row locks, SKIP LOCKED where the database has it) or
	 * DBCRON_CLAIM_LOCK_ROW (XXL-JOB's schedule lock: one claimer at a
	 * time holds one lock row for its whole claim; a preread_ms of 0 then
	 * means 5000). */
	int claim_strategy;
	/* Called on the node's database thread once the node is registered
	 * and then after each heartbeat that renewed its lease, so about every
	 * heartbeat_ms while the database answers; NULL for none.  It must not
	 * block or call into the node.  (`dbcron node` sends systemd's READY=1
	 * on the first call and WATCHDOG=1 on each.) */
	void (*alive)(void *ctx);
	void *alive_ctx;
	/* Instead of db_url: the file that holds the URL, read once by
	 * dbcron_node_create as dbcron_db_open_file reads it (and never handed
	 * to a shell job of any node of this process: the list is
	 * process-wide, dbcron/db.h says why).  NULL: none. */
	const char *db_file;
	/* The node's log lines (logfmt: "ts=... level=... event=... k=v"),
	 * from its database loop, timer and workers.  Lines below log_level
	 * are dropped; DBCRON_LOG_DEFAULT (the default) keeps the process's
	 * level: info, or warn under `dbcron node --quiet`.  log NULL: each
	 * line goes to stderr in one write; else log(log_ctx, level, line,
	 * len) gets each one whole (ending in '\n', not NUL-terminated), from
	 * any of the node's threads and several at once: it must be
	 * thread-safe, must not block for long, and must not call into the
	 * node.  Per node: two nodes of one process keep their own. */
	int log_level;
	void (*log)(void *ctx, int level, const char *line, size_t len);
	void *log_ctx;
	/* The key webhook reactions are signed with (docs/reactions.md): the
	 * file's first line, read when the node starts and never handed to a
	 * job.  NULL: requests carry no signature. */
	const char *notify_secret_file;
} dbcron_node_config;

enum { DBCRON_CLAIM_PER_ROW = 0, DBCRON_CLAIM_LOCK_ROW = 1 };

/* Log levels (dbcron_node_config.log_level and the log callback's level). */
enum {
	DBCRON_LOG_DEFAULT = -1,
	DBCRON_LOG_DEBUG = 0,
	DBCRON_LOG_INFO = 1,
	DBCRON_LOG_WARN = 2,
	DBCRON_LOG_ERROR = 3,
	DBCRON_LOG_OFF = 4, /* log_level only: no lines at all */
};

typedef struct dbcron_node dbcron_node;

/* Fill cfg with the defaults above (db_url NULL). */
DBCRON_API void dbcron_node_config_init(dbcron_node_config *cfg);
/* Copies cfg (strings included; reads db_file); connects to nothing yet.
 * DBCRON_EINVAL when both or neither of db_url and db_file are given.  The
 * caller frees the node with dbcron_node_free. */
DBCRON_API int dbcron_node_create(const dbcron_node_config *cfg,
				  dbcron_node **out, dbcron_err *err);
/* Runs until dbcron_node_stop(), on the calling thread plus the node's own
 * (a database loop, a timer, the worker pools); returns DBCRON_OK after a
 * graceful stop, or an error when the node could not start (database,
 * schema).  One call per node; handlers run on worker threads. */
DBCRON_API int dbcron_node_run(dbcron_node *n, dbcron_err *err);
/* Ask a running node to stop gracefully: from any thread or a signal
 * handler (async-signal-safe). */
DBCRON_API void dbcron_node_stop(dbcron_node *n);
/* dbcron_node_stop without the wait: running jobs are stopped at once
 * instead of after grace_ms (recorded ABANDONED, retried elsewhere when
 * their node-loss policy is retry), and outcomes that cannot be written
 * at once are left to the lease's lapse.  Async-signal-safe, like
 * dbcron_node_stop; may follow it (a second Ctrl-C). */
DBCRON_API void dbcron_node_stop_now(dbcron_node *n);
/* After dbcron_node_run has returned (or was never called).  NULL is
 * accepted. */
DBCRON_API void dbcron_node_free(dbcron_node *n);

#ifdef __cplusplus
}
#endif
#endif
