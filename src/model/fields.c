/*
 * The job-field table (core/job_fields.h) turned into data: the field
 * descriptors, the key table of `job add` / `job apply` / HTTP JSON, and
 * the one rule that says whether two jobs differ (model_job_diff).  Keeps
 * the invariant that every key, every stored column and every comparison
 * comes from the same row, so none can be forgotten when a field is added.
 */
#include <string.h>

#include "model/fields.h"
#include "model/jobdef.h"
#include "model/rules.h"

/* ENUM codecs' value -> name, with the int the table stores. */
static const char *misfire_name(int v)
{
	return dbcron_misfire_name((dbcron_misfire)v);
}

static const char *overlap_name(int v)
{
	return dbcron_overlap_name((dbcron_overlap)v);
}

static const char *node_loss_name(int v)
{
	return dbcron_node_loss_name((dbcron_node_loss)v);
}

/* The members the INT and INTN kinds reach through an int pointer are
 * ints or enums of int's size; the table says which, this checks it. */
#define FS_SIZE_TEXT sizeof(char *)
#define FS_SIZE_INT sizeof(int)
#define FS_SIZE_I64 sizeof(int64_t)
#define FS_SIZE_I64N sizeof(int64_t)
#define FS_SIZE_INTN sizeof(int)
#define FS_SIZE_BOOL sizeof(bool)
#define FS_SIZE_ARGV sizeof(char **)
#define FS_SIZE_ENV sizeof(char **)
#define FS_SIZE_HANDLER sizeof(char *)
#define CHECK_SIZE(m, col, st, key, codec, args, scope, role, dflt, help)                    \
	_Static_assert(sizeof(((dbcron_job *)0)->m) == FS_SIZE_##st,                          \
		       "job field " #m ": its member does not match its storage kind " #st);
DBCRON_JOB_FIELDS(CHECK_SIZE)

#define ARGS_EXPAND(...) __VA_ARGS__
#define META_H(meta, text) meta
#define META_H0 NULL
#define HELP_H(meta, text) text
#define HELP_H0 NULL

#define DESCRIPTOR(m_, col_, st_, key_, codec_, args_, scope_, role_, dflt_, help_)        \
	{.member = #m_,                                                                        \
	 .column = #col_,                                                                      \
	 .off = offsetof(dbcron_job, m_),                                                      \
	 .store = MODEL_FS_##st_,                                                              \
	 .key = DBCRON_FK_ID_##key_,                                                           \
	 .codec = MODEL_FC_##codec_,                                                           \
	 .args = {ARGS_EXPAND args_},                                                          \
	 .scope = MODEL_SCOPE_##scope_,                                                        \
	 .role = MODEL_ROLE_##role_,                                                           \
	 .meta = META_##help_,                                                                 \
	 .help = HELP_##help_},

const model_field model_fields[MODEL_NFIELDS] = {DBCRON_JOB_FIELDS(DESCRIPTOR)};

/* The key table: one entry per keyed row, the schedule's row giving its
 * four keys. */
#define KEY_K(id, flag, snake, type) {MODEL_JK_##id, flag, snake, MODEL_JD_##type},
#define KEY_K0
#define KEY_S(id, key, type, kind) {MODEL_JK_##id, key, NULL, MODEL_JD_##type},
#define KEY_KSCHED DBCRON_JOB_SCHED_KEYS(KEY_S)
#define KEY_ROW(m, col, st, key, codec, args, scope, role, dflt, help) KEY_##key

const model_jobdef_key model_jobdef_keys[MODEL_JK__COUNT + 1] = {
	DBCRON_JOB_FIELDS(KEY_ROW){MODEL_JK__COUNT, NULL, NULL, 0},
};

const model_field *model_jobdef_field(const model_jobdef_key *k)
{
	if (!k || k->id < 0 || k->id >= MODEL_JK__COUNT)
		return NULL;
	for (size_t i = 0; i < MODEL_NFIELDS; i++) {
		const model_field *f = &model_fields[i];
		if (f->key == k->id ||
		    (f->codec == MODEL_FC_SCHED && k->id >= MODEL_JK_CRON && k->id <= MODEL_JK_NEEDS))
			return f;
	}
	return NULL;
}

model_jobdef_id model_sched_key(dbcron_sched_kind kind)
{
	switch (kind) {
	case DBCRON_SCHED_EVERY:
		return MODEL_JK_EVERY;
	case DBCRON_SCHED_AFTER:
		return MODEL_JK_AFTER;
	case DBCRON_SCHED_AT:
		return MODEL_JK_AT;
	case DBCRON_SCHED_NEEDS:
		return MODEL_JK_NEEDS;
	default:
		return MODEL_JK_CRON;
	}
}

bool model_field_in_scope(const dbcron_job *j, const model_field *f)
{
	switch (f->scope) {
	case MODEL_SCOPE_ANY:
		return true;
	case MODEL_SCOPE_HANDLER:
		return j->executor == DBCRON_EXEC_HANDLER;
	case MODEL_SCOPE_HTTP:
		return j->executor == DBCRON_EXEC_HTTP;
	case MODEL_SCOPE_SQL:
		return j->executor == DBCRON_EXEC_SQL;
	default: /* COMMAND, RUNAS */
		/* an HTTP job's secrets come from an env-file, the one thing of
		 * how a command runs that it has */
		if (j->executor == DBCRON_EXEC_HTTP)
			return f->key == MODEL_JK_ENV_FILE;
		return j->executor != DBCRON_EXEC_HANDLER && j->executor != DBCRON_EXEC_SQL;
	}
}

static bool same_text(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	return strcmp(a, b) == 0;
}

/* As stored: a missing array is an empty one, a missing element "". */
static bool same_strv(char *const *a, int na, char *const *b, int nb)
{
	na = a ? na : 0;
	nb = b ? nb : 0;
	if (na != nb)
		return false;
	for (int i = 0; i < na; i++)
		if (strcmp(a[i] ? a[i] : "", b[i] ? b[i] : "") != 0)
			return false;
	return true;
}

/* One row of two jobs, by how it is stored. */
static bool same_field(const dbcron_job *a, const dbcron_job *b, const model_field *f)
{
	const void *pa = model_field_cptr(a, f), *pb = model_field_cptr(b, f);
	switch (f->store) {
	case MODEL_FS_TEXT:
		if (f->codec == MODEL_FC_TZ)
			return same_text(model_zone_norm(*(char *const *)pa),
					 model_zone_norm(*(char *const *)pb));
		return same_text(*(char *const *)pa, *(char *const *)pb);
	case MODEL_FS_HANDLER:
		/* a command job's handler is never stored */
		return same_text(a->executor == DBCRON_EXEC_HANDLER ? a->handler : NULL,
				 b->executor == DBCRON_EXEC_HANDLER ? b->handler : NULL);
	case MODEL_FS_INT:
	case MODEL_FS_INTN:
		return *(const int *)pa == *(const int *)pb;
	case MODEL_FS_I64:
	case MODEL_FS_I64N:
		return *(const int64_t *)pa == *(const int64_t *)pb;
	case MODEL_FS_BOOL:
		return *(const bool *)pa == *(const bool *)pb;
	case MODEL_FS_ARGV:
		return same_strv(a->argv, a->argc, b->argv, b->argc);
	case MODEL_FS_ENV:
		return same_strv(a->env, a->envc, b->env, b->envc);
	}
	return false;
}

size_t model_job_diff(const dbcron_job *a, const dbcron_job *b, unsigned roles,
		      model_diff_fn each, void *ctx)
{
	size_t n = 0;
	bool sched = false;
	for (size_t i = 0; i < MODEL_NFIELDS; i++) {
		const model_field *f = &model_fields[i];
		if (!(f->role & roles) || same_field(a, b, f))
			continue;
		n++;
		if (f->codec != MODEL_FC_SCHED) {
			if (each)
				each(ctx, f, f->key);
			continue;
		}
		/* kind, text and interval are one schedule, reported once by
		 * its keys: cron -> every changes both, in key order */
		if (sched || !each)
			continue;
		sched = true;
		model_jobdef_id ka = model_sched_key(a->kind), kb = model_sched_key(b->kind);
		each(ctx, f, ka < kb ? ka : kb);
		if (ka != kb)
			each(ctx, f, ka < kb ? kb : ka);
	}
	return n;
}
