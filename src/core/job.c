/*
 * Jobs and runs as plain data: defaults, ownership of their strings, deep
 * copies and the enum names.  Nothing here knows a schedule's meaning
 * (validation and next fires are src/model/job.c), so the ground floor
 * includes neither the cron engine nor the handler registry.
 */
#include <string.h>

#include "core/alloc.h"
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
	job->umask = -1;
	job->created_ms = job->updated_ms = -1;
}

static void strv_free(char **v, int n)
{
	if (!v)
		return;
	for (int i = 0; i < n; i++)
		dbcron__free(v[i]);
	dbcron__free(v);
}

/* A deep copy of v[0..n) into *out, NULL-terminated; *outn counts what
 * was copied so far, so a failure leaves something strv_free can take. */
static int strv_copy(char **v, int n, char ***out, int *outn)
{
	*out = NULL;
	*outn = 0;
	if (!v)
		return DBCRON_OK;
	*out = dbcron__calloc((size_t)n + 1, sizeof(char *));
	if (!*out)
		return DBCRON_ENOMEM;
	for (int i = 0; i < n; i++) {
		if (!((*out)[i] = dbcron__strdup(v[i])))
			return DBCRON_ENOMEM;
		*outn = i + 1;
	}
	return DBCRON_OK;
}

void dbcron_job_clear(dbcron_job *job)
{
	dbcron__free(job->name);
	dbcron__free(job->spec);
	dbcron__free(job->tz);
	dbcron__free(job->handler);
	dbcron__free(job->arg);
	dbcron__free(job->set_aside);
	dbcron__free(job->user);
	dbcron__free(job->group);
	dbcron__free(job->cwd);
	dbcron__free(job->env_file);
	strv_free(job->argv, job->argc);
	strv_free(job->env, job->envc);
	dbcron_job_init(job);
}

int dbcron_job_copy(dbcron_job *dst, const dbcron_job *src)
{
	*dst = *src;
	dst->name = dst->spec = dst->tz = dst->handler = dst->arg = dst->set_aside = NULL;
	dst->user = dst->group = dst->cwd = dst->env_file = NULL;
	dst->argv = dst->env = NULL;
	dst->argc = dst->envc = 0;
	if ((src->name && !(dst->name = dbcron__strdup(src->name))) ||
	    (src->spec && !(dst->spec = dbcron__strdup(src->spec))) ||
	    (src->tz && !(dst->tz = dbcron__strdup(src->tz))) ||
	    (src->handler && !(dst->handler = dbcron__strdup(src->handler))) ||
	    (src->arg && !(dst->arg = dbcron__strdup(src->arg))) ||
	    (src->set_aside && !(dst->set_aside = dbcron__strdup(src->set_aside))) ||
	    (src->user && !(dst->user = dbcron__strdup(src->user))) ||
	    (src->group && !(dst->group = dbcron__strdup(src->group))) ||
	    (src->cwd && !(dst->cwd = dbcron__strdup(src->cwd))) ||
	    (src->env_file && !(dst->env_file = dbcron__strdup(src->env_file))))
		goto out_nomem;
	if (strv_copy(src->argv, src->argc, &dst->argv, &dst->argc) ||
	    strv_copy(src->env, src->envc, &dst->env, &dst->envc))
		goto out_nomem;
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
