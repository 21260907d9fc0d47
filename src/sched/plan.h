/*
 * The fire planner: decides, for one due job inside the claim transaction,
 * which fires to write (scheduled, misfired) and the job's next fire.  Pure
 * computation; the store calls it through store_plan_fn.
 */
#ifndef DBCRON_SCHED_PLAN_H
#define DBCRON_SCHED_PLAN_H

#include "store/store.h"

typedef struct planner planner;

int planner_create(planner **out, dbcron_err *err);
void planner_free(planner *p);
/* The store_plan_fn; ctx is a planner. */
int planner_plan(void *ctx, const dbcron_job *job, int64_t now_ms,
		 int64_t horizon_ms, store_plan *out);
/* Next fire of job strictly after after_ms using the planner's cache of
 * parsed expressions.  1 found, 0 none, < 0 -error. */
int planner_next(planner *p, const dbcron_job *job, int64_t after_ms,
		 int64_t *next);
/* Cap on fires one job contributes to one claim. */
#define PLAN_MAX_FIRES_PER_JOB 1000
/* Cap on missed instants counted one by one after an outage. */
#define PLAN_MAX_MISSED_COUNT 100000

#endif
