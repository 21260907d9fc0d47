/*
 * The schedule rules, each once: which edits keep a job's place in its
 * series, and what follows the end of a run (a retry, the next fire of an
 * AFTER job).  Pure functions of a job and a run; the store protocol, the
 * node and the front ends all call these instead of restating them.
 */
#ifndef DBCRON_MODEL_RULES_H
#define DBCRON_MODEL_RULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dbcron/cron.h"
#include "dbcron/job.h"

/* A CRON job's expression, parsed with the job's seed when it has one
 * (H takes its value from it, docs/cron.md); without one an H is refused.
 * The caller frees *out with dbcron_cron_free. */
int model_job_cron(const dbcron_job *job, dbcron_cron **out, dbcron_err *err);

/* One zone name: NULL, "" and "UTC" are all UTC. */
const char *model_zone_norm(const char *tz);

/* Same kind, same schedule text, the same zone (model_zone_norm) and the
 * same window (start_at, end_at): the job keeps its next fire and its
 * EVERY anchor when it is edited.  A new window keeps the anchor and an AT
 * instant (model_job_series) but plans the next fire again. */
bool model_same_schedule(const dbcron_job *a, const dbcron_job *b);

/*
 * The window (start_at, end_at; -1 open) of every planner: where a series
 * search starts (the instant before start_at when after_ms is earlier, so
 * the first fire is the first at or after start_at), and an instant that
 * is found: -1 when it falls after end_at; before start_at, start_at for an
 * AFTER job (its delay has passed) and -1 for any other.
 */
int64_t model_window_after(const dbcron_job *job, int64_t after_ms);
/*
 * The exclusion calendar (--exclude-calendar, its days in
 * job->exclude_days): true when instant at falls on one of its days in the
 * job's zone, with *resume the last ms of that local day, from which a
 * search for the next fire goes on.  Every planner skips such instants
 * (dbcron_job_next_fire, the node's planner_next), at most
 * MODEL_EXCLUDED_MAX of them in a row: a calendar that excludes every day
 * for that long leaves the job without a next fire.
 */
#define MODEL_EXCLUDED_MAX 4000
bool model_excluded_day(const dbcron_job *job, int64_t at, int64_t *resume);
int64_t model_window_clamp(const dbcron_job *job, int64_t at);

/* Retry backoff after a failed attempt (1-based), seed 001:
 * min(base * 2^(attempt-1), cap), plus up to 10% jitter when asked. */
int64_t model_backoff_ms(const dbcron_job *job, int attempt);

/* A run of job with this attempt that ended ABANDONED because its node was
 * lost gets a new attempt: policy retry and attempts left. */
bool model_retry_on_node_loss(const dbcron_job *job, int attempt);

/*
 * Routing's reason, once for the views and the claim: why no live node can
 * run a job whose handler is `handler` ("no live node has registered
 * handler 'x'"), into buf (len bytes, cut to fit); returns buf.
 */
const char *model_unrunnable_why(const char *handler, char *buf, size_t len);

/* What the end of one run asks of the store. */
typedef struct model_followup {
	int64_t retry_due_at;     /* -1: no new attempt */
	int64_t job_next_fire_at; /* -1: leave the job alone */
} model_followup;

/*
 * The end of a run in state `end` at finished_ms: failures and time-outs
 * retry with backoff while attempts remain (unless no_retry: a replaced
 * run), a node-lost ABANDONED run by model_retry_on_node_loss (unless
 * no_retry: a fire that never started, of a paused or deleted job), and an AFTER
 * job with no new attempt fires next at finished_ms + interval.
 */
model_followup model_run_followup(const dbcron_job *job, int attempt,
				  dbcron_run_state end, bool no_retry,
				  int64_t finished_ms);

/*
 * A run its lost node held, ended ABANDONED at now_ms.  start_written: its
 * RUNNING write had landed.  One whose start was never written was due
 * before the lease ended, so it may or may not have run: under policy retry
 * it gets a new attempt while the retry budget lasts, like any lost run
 * (a handler that crashes its node before the start write must not be
 * retried forever); under abandon it stays abandoned (at-most-once: it may
 * have run).  Either way the ABANDONED row says why.
 */
model_followup model_lost_followup(const dbcron_job *job, int attempt, bool start_written,
				   int64_t now_ms);

/*
 * The next fire of a paused job that is resumed at now_ms: fires that fell
 * in the pause are not misfires (the operator asked for them not to run),
 * so the series goes on from now.  AFTER: now + interval; AT: the stored
 * next fire (a one-shot that has not fired still fires, at once if past);
 * CRON and EVERY: the first fire after now, -1 when there is none.
 * DBCRON_OK and *next, or an error code with err set.
 */
int model_resume_next_fire(const dbcron_job *job, int64_t now_ms,
			   int64_t *next, dbcron_err *err);

/*
 * Place a job being defined at now_ms in its series, before validation:
 * AT resolves its text ("now+5m") to at_ms, EVERY anchors at now.  prev
 * (may be NULL) is the stored job of the same name; when
 * model_same_schedule(job, prev), its instant and anchor are kept instead,
 * so that re-applying a definition moves nothing and a one-shot that
 * already fired is not re-armed.  An AT text that resolves to prev's very
 * instant (an export's RFC 3339 for a stored "now+5m") is the same
 * schedule: job->spec becomes prev's text.  An error is always about the
 * AT text (or DBCRON_ENOMEM).
 */
int model_job_series(dbcron_job *job, int64_t now_ms, const dbcron_job *prev,
		     dbcron_err *err);

/*
 * next_fire_at of a validated job defined at now_ms (after
 * model_job_series): with the same schedule as prev, prev's next fire,
 * unless this definition resumes a paused prev (then
 * model_resume_next_fire); otherwise AT: the instant, even when past (the
 * misfire threshold decides what a late fire is); AFTER: now + interval;
 * CRON and EVERY: the first fire after now, -1 when there is none.
 */
int model_job_first_fire(dbcron_job *job, int64_t now_ms,
			 const dbcron_job *prev, dbcron_err *err);

/*
 * The names of a NEEDS job's spec ("a,b"), one per call: the next name
 * after *pos into buf (NUL-terminated), *pos moved past it; false at the
 * end.  A name longer than buf is cut (the name rule keeps them short).
 */
bool model_needs_next(const char **pos, char *buf, size_t len);

#endif
