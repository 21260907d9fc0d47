/*
 * The schedule rules, each once: which edits keep a job's place in its
 * series, and what follows the end of a run (a retry, the next fire of an
 * AFTER job).  Pure functions of a job and a run; the store protocol, the
 * node and the front ends all call these instead of restating them.
 */
#ifndef DBCRON_MODEL_RULES_H
#define DBCRON_MODEL_RULES_H

#include <stdbool.h>
#include <stdint.h>

#include "dbcron/job.h"

/* One zone name: NULL, "" and "UTC" are all UTC. */
const char *model_zone_norm(const char *tz);

/* Same kind, same schedule text and the same zone (model_zone_norm): the
 * job keeps its next fire and its EVERY anchor when it is edited. */
bool model_same_schedule(const dbcron_job *a, const dbcron_job *b);

/* Retry backoff after a failed attempt (1-based), seed 001:
 * min(base * 2^(attempt-1), cap), plus up to 10% jitter when asked. */
int64_t model_backoff_ms(const dbcron_job *job, int attempt);

/* A run of job with this attempt that ended ABANDONED because its node was
 * lost gets a new attempt: policy retry and attempts left. */
bool model_retry_on_node_loss(const dbcron_job *job, int attempt);

/* What the end of one run asks of the store. */
typedef struct model_followup {
	int64_t retry_due_at;     /* -1: no new attempt */
	int64_t job_next_fire_at; /* -1: leave the job alone */
} model_followup;

/*
 * The end of a run in state `end` at finished_ms: failures and time-outs
 * retry with backoff while attempts remain (unless no_retry: a replaced
 * run), a node-lost ABANDONED run by model_retry_on_node_loss, and an AFTER
 * job with no new attempt fires next at finished_ms + interval.
 */
model_followup model_run_followup(const dbcron_job *job, int attempt,
				  dbcron_run_state end, bool no_retry,
				  int64_t finished_ms);

#endif
