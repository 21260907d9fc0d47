/*
 * The reaction checks that need the store: a job:NAME target must name a
 * job, one of the batch being written or a stored one, so that a typo is
 * refused at add/set/apply instead of failing at every event.  Keeps the
 * all-or-nothing promise of apply: it runs before the write, and refuses
 * the batch with the entry, the key and the target named.  (A job deleted
 * later leaves its reactors' targets dangling; delivery then marks the
 * event failed, docs/reactions.md.)  Also the outbox's listing for the
 * front ends.
 */
#include <jansson.h>
#include <string.h>

#include "app/app.h"
#include "app/app_int.h"
#include "model/jobdef.h"
#include "model/json.h"
#include "model/target.h"

static const model_jobdef_id react_keys[] = {MODEL_JK_ON_FAILURE, MODEL_JK_ON_SUCCESS,
					      MODEL_JK_ON_MISFIRE, MODEL_JK_ON_OVERDUE};

static bool in_batch(const model_jobdef *defs, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (defs[i].job.name && strcmp(defs[i].job.name, name) == 0)
			return true;
	return false;
}

static int count_job(void *ctx, const dbcron_job *job)
{
	(void)job;
	(*(size_t *)ctx)++;
	return 0;
}

/* One target of entry d: fine, or err naming the key and the target. */
static int check_one(store *s, const model_jobdef *defs, size_t n, const model_jobdef *d,
		     model_jobdef_id id, const char *t, size_t len, dbcron_err *err)
{
	char name[MODEL_TARGET_MAX + 1], label[64];
	if (len < 4 || len > MODEL_TARGET_MAX || strncmp(t, "job:", 4) != 0)
		return DBCRON_OK;
	memcpy(name, t + 4, len - 4);
	name[len - 4] = '\0';
	if (in_batch(defs, n, name))
		return DBCRON_OK;
	const char *names[1] = {name};
	size_t found = 0;
	int rc = store_jobs_named(s, names, 1, count_job, &found, err);
	if (rc)
		return rc;
	if (found)
		return DBCRON_OK;
	/* "--on-failure 'job:x'" reads as the command line did */
	return dbcron_err_set(err, DBCRON_EINVAL, "%s%s'job:%s': no job named '%s'",
			      model_jobdef_label(d, model_jobdef_key_of(id), label, sizeof(label)),
			      d->cli ? " " : ": ", name, name);
}

int app__check_job_targets(store *s, const model_jobdef *defs, size_t n, size_t *bad,
			   dbcron_err *err)
{
	for (size_t i = 0; i < n; i++) {
		for (size_t k = 0; k < sizeof(react_keys) / sizeof(react_keys[0]); k++) {
			const model_field *f = model_jobdef_field(model_jobdef_key_of(react_keys[k]));
			const char *list = *(char *const *)model_field_cptr(&defs[i].job, f), *t;
			size_t len;
			while ((t = model_targets_next(&list, &len))) {
				int rc = check_one(s, defs, n, &defs[i], react_keys[k], t, len, err);
				if (rc) {
					*bad = i;
					return rc;
				}
			}
		}
	}
	return DBCRON_OK;
}

static json_t *text_or_null(const char *s)
{
	return s ? json_string(s) : json_null();
}

static json_t *time_or_null(int64_t ms)
{
	char t[64];
	return ms < 0 ? json_null() : json_string(model_time_text(ms, t, sizeof(t)));
}

typedef struct event_list {
	json_t *a;
	bool oom;
} event_list;

static int event_json(void *ctx, const store_event *e)
{
	event_list *l = ctx;
	/* an overdue event before any success has no run (run_id <= 0) */
	json_t *o = json_pack("{s:I, s:o, s:o, s:s, s:o, s:s, s:i, s:o, s:o, s:o, s:o, s:o}",
			      "id", (json_int_t)e->id, "job", text_or_null(e->job_name), "run_id",
			      e->run_id > 0 ? json_integer(e->run_id) : json_null(), "kind", model_react_kind_name(e->kind),
			      "target", text_or_null(e->target), "state",
			      model_event_state_name(e->state), "attempts", e->attempts,
			      "next_attempt_at",
			      e->state == 1 ? time_or_null(e->next_at) : json_null(), "last_error",
			      text_or_null(e->last_error), "node", text_or_null(e->node),
			      "created_at", time_or_null(e->created_ms), "finished_at",
			      time_or_null(e->finished_ms));
	if (!o || json_array_append_new(l->a, o)) {
		l->oom = true;
		return 1;
	}
	return 0;
}

int app_events_list(store *s, const char *job, const char *state, long limit, json_t **out,
		    dbcron_err *err)
{
	*out = NULL;
	int st = 0;
	if (state && *state && (st = model_event_state_parse(state)) < 0)
		return dbcron_err_set(err, DBCRON_EINVAL,
				      "state '%.100s': expected pending, delivering, delivered or failed",
				      state);
	if (limit > APP_EVENTS_MAX)
		return dbcron_err_set(err, DBCRON_EINVAL, "limit %ld: at most %d", limit,
				      APP_EVENTS_MAX);
	event_list l = {.a = json_array()};
	if (!l.a)
		return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory");
	int rc = store_events_list(s, job && *job ? job : NULL, st, limit > 0 ? limit : 100,
				   event_json, &l, err);
	if (!rc && l.oom)
		rc = dbcron_err_set(err, DBCRON_ENOMEM, "out of memory listing events");
	if (rc) {
		json_decref(l.a);
		return rc;
	}
	*out = l.a;
	return DBCRON_OK;
}
