/*
 * The run state machine of dbcron/run.h as one table.  The store protocol
 * checks every state it writes against it (src/store/), for every
 * dialect, so a code path that would move a finished run is refused as an
 * internal error instead of rewriting the run log.
 */
#include <stdint.h>

#include "dbcron/run.h"

#define BIT(s) (1u << (s))
#define TERMINAL_SET                                                      \
	(BIT(DBCRON_RUN_SUCCEEDED) | BIT(DBCRON_RUN_FAILED) |             \
	 BIT(DBCRON_RUN_TIMED_OUT) | BIT(DBCRON_RUN_SKIPPED) |            \
	 BIT(DBCRON_RUN_MISFIRED) | BIT(DBCRON_RUN_ABANDONED) |          \
	 BIT(DBCRON_RUN_CANCELLED))

/* next[from]: the states a row in `from` may be written in. */
static const uint32_t next[DBCRON_RUN_CANCELLED + 1] = {
	/* a new row: claimed fires, planner records, retries, lock attempts */
	[DBCRON_RUN_NONE] = BIT(DBCRON_RUN_SCHEDULED) | TERMINAL_SET,
	[DBCRON_RUN_SCHEDULED] = BIT(DBCRON_RUN_SCHEDULED) | BIT(DBCRON_RUN_RUNNING) |
				 BIT(DBCRON_RUN_SKIPPED) | BIT(DBCRON_RUN_MISFIRED) |
				 BIT(DBCRON_RUN_ABANDONED) | BIT(DBCRON_RUN_FAILED) |
				 BIT(DBCRON_RUN_CANCELLED),
	[DBCRON_RUN_RUNNING] = BIT(DBCRON_RUN_SUCCEEDED) | BIT(DBCRON_RUN_FAILED) |
			       BIT(DBCRON_RUN_TIMED_OUT) | BIT(DBCRON_RUN_ABANDONED) |
			       BIT(DBCRON_RUN_CANCELLED),
	/* terminal states: 0 */
};

bool dbcron_run_state_terminal(int state)
{
	return state > 0 && state <= DBCRON_RUN_CANCELLED && (TERMINAL_SET & BIT(state));
}

bool dbcron_run_transition_ok(int from, int to)
{
	if (from < 0 || from > DBCRON_RUN_CANCELLED || to <= 0 || to > DBCRON_RUN_CANCELLED)
		return false;
	return (next[from] & BIT(to)) != 0;
}
