/*
 * Job definitions: defaults, ownership of their strings, validation and the
 * next fire of each schedule kind.  Keeps the rule that a job in the store
 * is always valid: every path that writes a job calls dbcron_job_validate().
 */
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "core/timeutil.h"
#include "dbcron/cron.h"
#include "dbcron/handler.h"
#include "dbcron/job.h"

void dbcron_job_init(dbcron_job *job)
{
	memset(job, 0, sizeof(*job));
	job->misfire = DBCRON_MISFIRE_FIRE_ONCE;
	job->max_catchup = 100;
	job->misfire_threshold_ms = 5000;
	job->overlap = DBCRON_OVERLAP_SKIP;
	job->node_loss = DBCRON_NODE_LOSS_RETRY;
	job->max_retries = 3;
	job->retry_base_ms = 60000;
	job->retry_cap_ms = 3600000;
	job->executor = DBCRON_EXEC_SHELL;
	job->next_fire_at = -1;
	job->anchor_ms = 0;
	job->at_ms = -1;
	job->created_ms = job->updated_ms = -1;
}

void dbcron_job_clear(dbcron_job *job)
{
	dbcron__free(job->name);
	dbcron__free(job->spec);
	dbcron__free(job->tz);
	dbcron__free(job->handler);
	dbcron__free(job->arg);
	if (job->argv) {
		for (int i = 0; i < job->argc; i++)
			dbcron__free(job->argv[i]);
		dbcron__free(job->argv);
	}
	dbcron_job_init(job);
}

int dbcron_job_copy(dbcron_job *dst, const dbcron_job *src)
{
	*dst = *src;
	dst->name = dst->spec = dst->tz = dst->handler = dst->arg = NULL;
	dst->argv = NULL;
	dst->argc = 0;
	if ((src->name && !(dst->name = dbcron__strdup(src->name))) ||
	    (src->spec && !(dst->spec = dbcron__strdup(src->spec))) ||
	    (src->tz && !(dst->tz = dbcron__strdup(src->tz))) ||
	    (src->handler && !(dst->handler = dbcron__strdup(src->handler))) ||
	    (src->arg && !(dst->arg = dbcron__strdup(src->arg))))
		goto out_nomem;
	if (src->argv) {
		dst->argv = dbcron__calloc((size_t)src->argc + 1, sizeof(char *));
		if (!dst->argv)
			goto out_nomem;
		for (int i = 0; i < src->argc; i++) {
			dst->argv[i] = dbcron__strdup(src->argv[i]);
			if (!dst->argv[i])
				goto out_nomem;
			dst->argc = i + 1;
		}
	}
	return DBCRON_OK;
out_nomem:
	dbcron_job_clear(dst);
	return DBCRON_ENOMEM;
}

void dbcron_run_clear(dbcron_run *run)
{
	dbcron__free(run->job_name);
	dbcron__free(run->node);
	dbcron__free(run->claim_token);
	dbcron__free(run->error);
	dbcron__free(run->output);
	memset(run, 0, sizeof(*run));
}

static const char *const state_names[] = {
	NULL, "scheduled", "running", "succeeded", "failed",
	"timed_out", "skipped", "misfired", "abandoned",
};
static const char *const misfire_names[] = {NULL, "fire_once", "skip", "catch_up"};
static const char *const overlap_names[] = {NULL, "skip", "allow", "queue", "replace"};
static const char *const node_loss_names[] = {NULL, "retry", "abandon"};
static const char *const kind_names[] = {NULL, "cron", "every", "after", "at"};

#define NAME_OF(tab, v) \
	((v) > 0 && (size_t)(v) < sizeof(tab) / sizeof(tab[0]) ? tab[v] : "?")

static int parse_name(const char *const *tab, size_t n, const char *s)
{
	for (size_t i = 1; s && i < n; i++)
		if (strcmp(tab[i], s) == 0)
			return (int)i;
	return -1;
}

#define PARSE_OF(tab, s) parse_name(tab, sizeof(tab) / sizeof(tab[0]), s)

const char *dbcron_run_state_name(dbcron_run_state s) { return NAME_OF(state_names, s); }
int dbcron_run_state_parse(const char *s) { return PARSE_OF(state_names, s); }
const char *dbcron_misfire_name(dbcron_misfire m) { return NAME_OF(misfire_names, m); }
int dbcron_misfire_parse(const char *s) { return PARSE_OF(misfire_names, s); }
const char *dbcron_overlap_name(dbcron_overlap o) { return NAME_OF(overlap_names, o); }
int dbcron_overlap_parse(const char *s) { return PARSE_OF(overlap_names, s); }
const char *dbcron_node_loss_name(dbcron_node_loss n) { return NAME_OF(node_loss_names, n); }
int dbcron_node_loss_parse(const char *s) { return PARSE_OF(node_loss_names, s); }
const char *dbcron_sched_kind_name(dbcron_sched_kind k) { return NAME_OF(kind_names, k); }

static int valid_name(const char *s)
{
	if (!s || !*s || strlen(s) > 200)
		return 0;
	for (const char *p = s; *p; p++)
		if ((unsigned char)*p < 0x21 || *p == 0x7f)
			return 0;
	return 1;
}

int dbcron_job_validate(dbcron_job *job, dbcron_err *err)
{
	int rc;
	if (!valid_name(job->name))
		return dbcron_err_set(err, DBCRON_EINVAL,
				      "job name '%s': must be 1-200 printable characters without spaces",
				      job->name ? job->name : "");
	const char *n = job->name;
	if (!job->spec || !*job->spec)
		return dbcron_err_set(err, DBCRON_EINVAL,
				      "job '%s': no schedule (give one of --cron, --every, --after, --at)", n);
	dbcron_tz *tz = NULL;
	rc = dbcron_tz_open(job->tz, &tz, err);
	if (rc)
		return rc;
	dbcron_tz_free(tz);
	switch (job->kind) {
	case DBCRON_SCHED_CRON: {
		dbcron_cron *c = NULL;
		rc = dbcron_cron_parse(job->spec, &c, err);
		if (rc)
			return rc;
		dbcron_cron_free(c);
		break;
	}
	case DBCRON_SCHED_EVERY:
	case DBCRON_SCHED_AFTER:
		rc = dbcron__parse_duration(job->spec, 0, &job->interval_ms, err);
		if (rc)
			return rc;
		break;
	case DBCRON_SCHED_AT:
		if (job->at_ms < 0)
			return dbcron_err_set(err, DBCRON_EINVAL,
					      "job '%s': --at time not resolved", n);
		break;
	default:
		return dbcron_err_set(err, DBCRON_EINVAL, "job '%s': unknown schedule kind", n);
	}
	if (job->max_retries < 0 || job->max_retries > 1000)
		return dbcron_err_set(err, DBCRON_EINVAL,
				      "job '%s': retries %d out of range 0-1000", n, job->max_retries);
	if (job->max_catchup < 1 || job->max_catchup > 100000)
		return dbcron_err_set(err, DBCRON_EINVAL,
				      "job '%s': max-catchup %d out of range 1-100000", n, job->max_catchup);
	if (job->retry_base_ms <= 0 || job->retry_cap_ms < job->retry_base_ms)
		return dbcron_err_set(err, DBCRON_EINVAL,
				      "job '%s': retry base must be > 0 and cap >= base", n);
	if (job->timeout_ms < 0)
		return dbcron_err_set(err, DBCRON_EINVAL, "job '%s': negative timeout", n);
	if (job->misfire < DBCRON_MISFIRE_FIRE_ONCE || job->misfire > DBCRON_MISFIRE_CATCH_UP ||
	    job->overlap < DBCRON_OVERLAP_SKIP || job->overlap > DBCRON_OVERLAP_REPLACE ||
	    job->node_loss < DBCRON_NODE_LOSS_RETRY || job->node_loss > DBCRON_NODE_LOSS_ABANDON)
		return dbcron_err_set(err, DBCRON_EINVAL, "job '%s': unknown policy value", n);
	if (job->executor == DBCRON_EXEC_SHELL) {
		if (!job->argv || job->argc < 1 || !job->argv[0] || !*job->argv[0])
			return dbcron_err_set(err, DBCRON_EINVAL,
					      "job '%s': no command (give -- COMMAND [ARGS...] or --handler NAME)", n);
	} else if (job->executor == DBCRON_EXEC_HANDLER) {
		if (!job->handler || !dbcron_handler_exists(job->handler))
			return dbcron_err_set(err, DBCRON_EINVAL,
					      "job '%s': unknown handler '%s' (built in: noop, sleep)",
					      n, job->handler ? job->handler : "");
	} else {
		return dbcron_err_set(err, DBCRON_EINVAL, "job '%s': unknown executor", n);
	}
	return DBCRON_OK;
}

int dbcron_job_next_fire(const dbcron_job *job, int64_t after_ms, int64_t *next,
			 dbcron_err *err)
{
	switch (job->kind) {
	case DBCRON_SCHED_CRON: {
		dbcron_cron *c = NULL;
		dbcron_tz *tz = NULL;
		int rc = dbcron_cron_parse(job->spec, &c, err);
		if (rc)
			return -rc;
		rc = dbcron_tz_open(job->tz, &tz, err);
		if (rc) {
			dbcron_cron_free(c);
			return -rc;
		}
		/* cron has second resolution: the next second strictly after */
		int64_t after_s = after_ms >= 0 ? after_ms / 1000 : -((-after_ms + 999) / 1000);
		int64_t t;
		int found = dbcron_cron_next(c, tz, after_s, &t);
		dbcron_cron_free(c);
		dbcron_tz_free(tz);
		if (found)
			*next = t * 1000;
		return found;
	}
	case DBCRON_SCHED_EVERY: {
		int64_t iv = job->interval_ms, a = job->anchor_ms;
		if (after_ms < a) {
			*next = a;
			return 1;
		}
		*next = a + ((after_ms - a) / iv + 1) * iv;
		return 1;
	}
	case DBCRON_SCHED_AFTER:
		*next = after_ms + job->interval_ms;
		return 1;
	case DBCRON_SCHED_AT:
		if (job->at_ms > after_ms) {
			*next = job->at_ms;
			return 1;
		}
		return 0;
	}
	return -dbcron_err_set(err, DBCRON_EINVAL, "unknown schedule kind");
}
