/*
 * C callbacks as jobs (the `handler` executor).  Built in: "noop" (returns
 * at once) and "sleep" (arg: a duration such as "250ms"; stops early when
 * cancelled or timed out).  A run cancelled with `dbcron runs cancel` makes
 * dbcron_handler_should_stop() true; a handler that never asks runs to its
 * end, and the run is recorded cancelled all the same.
 */
#ifndef DBCRON_HANDLER_H
#define DBCRON_HANDLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dbcron/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dbcron_handler_ctx {
	const char *job;
	const char *arg; /* may be NULL */
	int64_t fire_at_ms;
	int attempt;
	int64_t run_id;
	const char *node;
	/* monotonic ms deadline (timeout), or -1 */
	int64_t deadline_mono_ms;
	/* opaque; ask dbcron_handler_should_stop() */
	const void *cancel;
	/* The run's parameters (dbcron job trigger --param, the job's
	 * --params defaults), "KEY=VALUE" each, nparams of them; ask
	 * dbcron_handler_param().  Plain data from the run log, never a
	 * secret.  Valid during the call only. */
	const char *const *params;
	size_t nparams;
	/* An every-node job's run (docs/scheduler.md "Every node"): this
	 * node's 0-based index among the nodes of the fire and their number,
	 * as DBCRON_NODE_INDEX / DBCRON_NODE_TOTAL give a command; node_total
	 * 0 for an ordinary run. */
	int node_index, node_total;
} dbcron_handler_ctx;

/*
 * A handler returns 0 on success or non-zero as its exit code; it may write
 * a message to errbuf.  Called on a worker thread without any dbcron lock
 * held; it must be thread-safe.
 */
typedef int (*dbcron_handler_fn)(const dbcron_handler_ctx *ctx, void *user,
				 char *errbuf, size_t errlen);

/*
 * Register fn under name for every node of this process (the registry is
 * global by design: a handler is code in this process; the only other
 * global is the list of secret files, dbcron/db.h says why).  name is
 * copied; user is borrowed and must stay valid for as long as any node may
 * run the handler.  Entries are never removed.  DBCRON_EEXISTS for a name
 * already registered (built-ins included), DBCRON_EINVAL for a NULL fn or
 * a name that is empty, longer than 200 bytes, not UTF-8 or holding a
 * control character (the rule for every stored name), DBCRON_ENOMEM.  Safe to call from any thread, also while
 * nodes run: a running node records the new name at its next heartbeat
 * (about heartbeat_ms) and claims the handler's jobs from then on.
 * Register before applying a job that names the handler (applying checks
 * the name).
 */
DBCRON_API int dbcron_handler_register(const char *name, dbcron_handler_fn fn,
				       void *user);
/* True once the run was cancelled or its deadline passed.  ctx is the one
 * the handler was called with, valid during that call only. */
DBCRON_API bool dbcron_handler_should_stop(const dbcron_handler_ctx *ctx);
/* The value of the run's parameter key, or NULL when the run has none
 * of that name.  Points into ctx: valid during the call only. */
DBCRON_API const char *dbcron_handler_param(const dbcron_handler_ctx *ctx, const char *key);
/* Is the name registered (built-ins included)? */
DBCRON_API bool dbcron_handler_exists(const char *name);

#ifdef __cplusplus
}
#endif
#endif
