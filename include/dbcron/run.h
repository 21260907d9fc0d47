/*
 * A run's life: the state enum, stored as its number, and the transitions
 * every writer of the run log is held to.
 *
 *              insert
 *                |
 *                v        start                  end
 *   +------> SCHEDULED ----------> RUNNING ----------> SUCCEEDED
 *   | hand back  |  |                 |   `----------> FAILED
 *   `------------'  |                 |   `----------> TIMED_OUT
 *                   |                 +--------------> ABANDONED (node lost)
 *                   |                 `--------------> CANCELLED (runs cancel)
 *                   +--> SKIPPED   (overlap policy)
 *                   +--> MISFIRED  (misfire policy, or started too late)
 *                   +--> ABANDONED (job deleted, or at-most-once unstarted)
 *                   +--> FAILED    (could not be started)
 *                   `--> CANCELLED (runs cancel before it started)
 *
 * The last seven are terminal: no write ever changes a terminal row.  A fire
 * may also be inserted directly as SKIPPED or MISFIRED (the planner's
 * records), and a finished lock attempt is inserted in its end state.  A
 * retry is a new row (attempt + 1) that starts in SCHEDULED; a SCHEDULED row
 * handed back or taken from a dead node stays SCHEDULED, unclaimed.
 *
 * Numbers are stored in the database: append only, never reuse.
 */
#ifndef DBCRON_RUN_H
#define DBCRON_RUN_H

#include <stdbool.h>

#include "dbcron/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum dbcron_run_state {
	DBCRON_RUN_SCHEDULED = 1,
	DBCRON_RUN_RUNNING = 2,
	DBCRON_RUN_SUCCEEDED = 3,
	DBCRON_RUN_FAILED = 4,
	DBCRON_RUN_TIMED_OUT = 5,
	DBCRON_RUN_SKIPPED = 6,
	DBCRON_RUN_MISFIRED = 7,
	DBCRON_RUN_ABANDONED = 8,
	/* stopped or never started on request (dbcron runs cancel); never
	 * retried */
	DBCRON_RUN_CANCELLED = 9,
} dbcron_run_state;

/* The state a row has before it exists, for dbcron_run_transition_ok(). */
#define DBCRON_RUN_NONE 0

/* True for SUCCEEDED, FAILED, TIMED_OUT, SKIPPED, MISFIRED, ABANDONED,
 * CANCELLED. */
DBCRON_API bool dbcron_run_state_terminal(int state);

/* Whether a run in state `from` (DBCRON_RUN_NONE: a new row) may be written
 * in state `to`, by the diagram above.  SCHEDULED -> SCHEDULED (hand back,
 * take over) is allowed; nothing leaves a terminal state. */
DBCRON_API bool dbcron_run_transition_ok(int from, int to);

#ifdef __cplusplus
}
#endif
#endif
