/*
 * The schedule rules of rules.h.  Before this file the same-schedule rule
 * was written three ways (the CLI, each store backend) and the node-loss
 * retry rule three times (the node, each backend); now every caller asks
 * here.
 */
#include <stdlib.h>
#include <string.h>

#include "model/rules.h"

const char *model_zone_norm(const char *tz)
{
	return !tz || !*tz || strcmp(tz, "UTC") == 0 ? NULL : tz;
}

static bool same_text(const char *a, const char *b)
{
	if (!a || !*a)
		return !b || !*b;
	return b && strcmp(a, b) == 0;
}

bool model_same_schedule(const dbcron_job *a, const dbcron_job *b)
{
	return a->kind == b->kind && same_text(a->spec, b->spec) &&
	       same_text(model_zone_norm(a->tz), model_zone_norm(b->tz));
}

int64_t model_backoff_ms(const dbcron_job *job, int attempt)
{
	int64_t d = job->retry_base_ms;
	for (int i = 1; i < attempt && d < job->retry_cap_ms; i++)
		d *= 2;
	if (d > job->retry_cap_ms)
		d = job->retry_cap_ms;
	if (job->retry_jitter && d >= 10)
		d += random() % (d / 10);
	return d;
}

bool model_retry_on_node_loss(const dbcron_job *job, int attempt)
{
	return job->node_loss == DBCRON_NODE_LOSS_RETRY && attempt <= job->max_retries;
}

model_followup model_run_followup(const dbcron_job *job, int attempt,
				  dbcron_run_state end, bool no_retry,
				  int64_t finished_ms)
{
	model_followup f = {.retry_due_at = -1, .job_next_fire_at = -1};
	bool failed = end == DBCRON_RUN_FAILED || end == DBCRON_RUN_TIMED_OUT;
	if (failed && !no_retry && attempt <= job->max_retries)
		f.retry_due_at = finished_ms + model_backoff_ms(job, attempt);
	else if (end == DBCRON_RUN_ABANDONED && model_retry_on_node_loss(job, attempt))
		f.retry_due_at = finished_ms;
	if (job->kind == DBCRON_SCHED_AFTER && f.retry_due_at < 0)
		f.job_next_fire_at = finished_ms + job->interval_ms;
	return f;
}
