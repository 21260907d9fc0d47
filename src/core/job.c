/*
 * Jobs and runs as plain data: defaults, ownership of their strings, deep
 * copies and the enum names.  Nothing here knows a schedule's meaning
 * (validation and next fires are src/model/job.c), so the ground floor
 * includes neither the cron engine nor the handler registry.
 */
#include <string.h>

#include "core/alloc.h"
#include "core/job_fields.h"
#include "dbcron/job.h"

#define INIT_ROW(m, col, st, key, codec, args, scope, role, dflt, help) job->m = dflt;

void dbcron_job_init(dbcron_job *job)
{
	memset(job, 0, sizeof(*job));
	DBCRON_JOB_FIELDS(INIT_ROW)
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

/* What a row of each storage kind owns (core/job_fields.h). */
#define FREE_TEXT(m) dbcron__free(job->m);
#define FREE_HANDLER(m) dbcron__free(job->m);
#define FREE_ARGV(m) strv_free(job->argv, job->argc);
#define FREE_ENV(m) strv_free(job->env, job->envc);
#define FREE_INT(m)
#define FREE_INTN(m)
#define FREE_I64(m)
#define FREE_I64N(m)
#define FREE_BOOL(m)
#define FREE_ROW(m, col, st, key, codec, args, scope, role, dflt, help) FREE_##st(m)

void dbcron_job_clear(dbcron_job *job)
{
	DBCRON_JOB_FIELDS(FREE_ROW)
	dbcron_job_init(job);
}

/* Forget what a shallow copy shares with its source. */
#define UNSHARE_TEXT(m) dst->m = NULL;
#define UNSHARE_HANDLER(m) dst->m = NULL;
#define UNSHARE_ARGV(m) dst->argv = NULL, dst->argc = 0;
#define UNSHARE_ENV(m) dst->env = NULL, dst->envc = 0;
#define UNSHARE_INT(m)
#define UNSHARE_INTN(m)
#define UNSHARE_I64(m)
#define UNSHARE_I64N(m)
#define UNSHARE_BOOL(m)
#define UNSHARE_ROW(m, col, st, key, codec, args, scope, role, dflt, help) UNSHARE_##st(m)

/* Copy what is owned; an || chain, false on the first failure. */
#define COPY_TEXT(m) || (src->m && !(dst->m = dbcron__strdup(src->m)))
#define COPY_HANDLER(m) COPY_TEXT(m)
#define COPY_ARGV(m) || strv_copy(src->argv, src->argc, &dst->argv, &dst->argc)
#define COPY_ENV(m) || strv_copy(src->env, src->envc, &dst->env, &dst->envc)
#define COPY_INT(m)
#define COPY_INTN(m)
#define COPY_I64(m)
#define COPY_I64N(m)
#define COPY_BOOL(m)
#define COPY_ROW(m, col, st, key, codec, args, scope, role, dflt, help) COPY_##st(m)

int dbcron_job_copy(dbcron_job *dst, const dbcron_job *src)
{
	*dst = *src;
	DBCRON_JOB_FIELDS(UNSHARE_ROW)
	if (false DBCRON_JOB_FIELDS(COPY_ROW)) {
		dbcron_job_clear(dst);
		return DBCRON_ENOMEM;
	}
	return DBCRON_OK;
}

void dbcron_run_clear(dbcron_run *run)
{
	dbcron__free(run->job_name);
	dbcron__free(run->node);
	dbcron__free(run->claim_token);
	dbcron__free(run->error);
	dbcron__free(run->output);
	dbcron__free(run->params);
	dbcron__free(run->for_node);
	memset(run, 0, sizeof(*run));
}

static const char *const state_names[] = {
	NULL, "scheduled", "running", "succeeded", "failed",
	"timed_out", "skipped", "misfired", "abandoned", "cancelled",
};
static const char *const misfire_names[] = {NULL, "fire_once", "skip", "catch_up"};
static const char *const overlap_names[] = {NULL, "skip", "allow", "queue", "replace"};
static const char *const node_loss_names[] = {NULL, "retry", "abandon"};
static const char *const kind_names[] = {NULL, "cron", "every", "after", "at", "needs"};

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
