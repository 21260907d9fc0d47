/*
 * The job-field table (core/job_fields.h) as data: one descriptor per row,
 * the store's column numbers, and the one rule that says in which fields
 * two jobs differ.  The key table of jobdef.h, the JSON codec (json.c) and
 * the store (rows.c, jobput.c) read these descriptors instead of naming
 * fields.
 */
#ifndef DBCRON_MODEL_FIELDS_H
#define DBCRON_MODEL_FIELDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/job_fields.h"
#include "dbcron/job.h"

typedef enum model_field_store {
	MODEL_FS_TEXT,
	MODEL_FS_INT,
	MODEL_FS_I64,
	MODEL_FS_I64N,
	MODEL_FS_INTN,
	MODEL_FS_BOOL,
	MODEL_FS_ARGV,
	MODEL_FS_ENV,
	MODEL_FS_HANDLER,
} model_field_store;

typedef enum model_field_codec {
	MODEL_FC_NONE,
	MODEL_FC_NAME,
	MODEL_FC_SCHED,
	MODEL_FC_TZ,
	MODEL_FC_ENUM,
	MODEL_FC_INT,
	MODEL_FC_DUR,
	MODEL_FC_BOOL,
	MODEL_FC_HANDLER,
	MODEL_FC_TEXT,
	MODEL_FC_ACCOUNT,
	MODEL_FC_PATH,
	MODEL_FC_ARGV,
	MODEL_FC_ENV,
	MODEL_FC_UMASK,
	MODEL_FC_TIME,
	MODEL_FC_SEED,
	MODEL_FC_TARGET,
	MODEL_FC_PARAMS,
	MODEL_FC_HTTP,
	MODEL_FC_HEADER,
	MODEL_FC_EXPECT,
	MODEL_FC_SQL,
	MODEL_FC_TAGS,
} model_field_codec;

typedef enum model_field_scope {
	MODEL_SCOPE_ANY,
	MODEL_SCOPE_HANDLER,
	MODEL_SCOPE_COMMAND,
	MODEL_SCOPE_RUNAS,
	MODEL_SCOPE_HTTP,
	MODEL_SCOPE_SQL,
} model_field_scope;

/* Bits, so a caller can ask for several roles at once. */
typedef enum model_field_role {
	MODEL_ROLE_NAME = 1,
	MODEL_ROLE_DEF = 2,
	MODEL_ROLE_STATE = 4,
	MODEL_ROLE_PLACE = 8,
	MODEL_ROLE_STORE = 16,
} model_field_role;

/* A codec's constants (the table's args column). */
typedef struct model_field_args {
	long long lo, hi;                  /* INT: the range */
	int zero;                          /* DUR: zero is a value */
	int omit;                          /* DUR, INT, BOOL: zero/false is not written (a rarely used key) */
	int (*parse)(const char *);        /* ENUM: name -> value, -1 unknown */
	const char *(*name)(int);          /* ENUM: value -> name */
	const char *what;                  /* ENUM: the choices; ACCOUNT, PATH: the word */
} model_field_args;

/* The model_jobdef_id of each key, in table order (schedule keys where
 * the schedule's row is). */
#define MODEL_KEYID_K(id, flag, snake, type) MODEL_JK_##id,
#define MODEL_KEYID_K0
#define MODEL_KEYID_S(id, key, type, kind) MODEL_JK_##id,
#define MODEL_KEYID_KSCHED DBCRON_JOB_SCHED_KEYS(MODEL_KEYID_S)
#define MODEL_X_KEYID(m, col, st, key, codec, args, scope, role, dflt, help) MODEL_KEYID_##key

typedef enum model_jobdef_id {
	DBCRON_JOB_FIELDS(MODEL_X_KEYID)
	MODEL_JK__COUNT,
	MODEL_JK__NONE = -1
} model_jobdef_id;

/* The store's column of each field: the job column lists are "id" and
 * then every row's column, in table order. */
#define MODEL_X_COL(m, col, st, key, codec, args, scope, role, dflt, help) MODEL_COL_##m,
enum {
	MODEL_COL_ID,
	DBCRON_JOB_FIELDS(MODEL_X_COL)
	MODEL_NCOLS
};
#define MODEL_NFIELDS (MODEL_NCOLS - 1)

typedef struct model_field {
	const char *member;
	const char *column;
	size_t off; /* offsetof(dbcron_job, member) */
	model_field_store store;
	model_jobdef_id key; /* MODEL_JK__NONE: no key of its own */
	model_field_codec codec;
	model_field_args args;
	model_field_scope scope;
	model_field_role role;
	const char *meta, *help; /* NULL without help */
} model_field;

/* Row i of the table is model_fields[i], at column i + 1. */
extern const model_field model_fields[MODEL_NFIELDS];

/* The member a descriptor names, in job. */
static inline void *model_field_ptr(dbcron_job *job, const model_field *f)
{
	return (char *)job + f->off;
}
static inline const void *model_field_cptr(const dbcron_job *job, const model_field *f)
{
	return (const char *)job + f->off;
}

/* Whether row f belongs to job j's definition: a handler job has no
 * command and nothing a command runs as, a command job no handler, a SQL
 * job only its statement and its database file of the three.  What
 * the JSON codec writes and what a job struct gives (jobdef.h). */
bool model_field_in_scope(const dbcron_job *j, const model_field *f);

/* Called once per field in which two jobs differ; key is the key to
 * report (a schedule change reports the old and the new kind's key, so
 * it may be called twice for one row; MODEL_JK__NONE for a field without
 * a key). */
typedef void (*model_diff_fn)(void *ctx, const model_field *f, model_jobdef_id key);

/*
 * The one rule for "is it the same": how many fields of the roles asked
 * (model_field_role bits) differ between a and b, each reported to each
 * (may be NULL).  Strings compare by content (NULL only equals NULL), a
 * zone by model_zone_norm, a handler only for handler jobs, command and
 * env arrays element by element.  The store asks with DEF | STATE |
 * PLACE (rewrite the row?), apply with DEF | STATE (what changes?).
 */
size_t model_job_diff(const dbcron_job *a, const dbcron_job *b, unsigned roles,
		      model_diff_fn each, void *ctx);

#endif
