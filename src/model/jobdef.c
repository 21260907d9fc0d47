/*
 * Job definitions from command-line flags and from JSON.  Owns the steps
 * that turn the keys of the field table (long flag = JSON key, fields.c)
 * into a dbcron_job, each by its row's codec: each value is checked alone
 * when it is set (so errors name the flag and the value), the whole
 * definition is checked before the database is touched, and times are
 * resolved against the database clock last, by the schedule rules of
 * rules.h.  Invariant kept: a definition
 * that passed model_jobdef_finish() is a job that dbcron_job_validate()
 * accepted, with next_fire_at set.  Prints nothing.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/text.h"
#include "core/alloc.h"
#include "core/timeutil.h"
#include "dbcron/cron.h"
#include "dbcron/handler.h"
#include "exec/exec.h"
#include "exec/http.h"
#include "exec/runas.h"
#include "model/jobdef.h"
#include "model/params.h"
#include "model/rules.h"
#include "model/tags.h"
#include "model/target.h"

void model_jobdef_init(model_jobdef *d, bool cli)
{
	memset(d, 0, sizeof(*d));
	dbcron_job_init(&d->job);
	d->cli = cli;
}

void model_jobdef_clear(model_jobdef *d)
{
	dbcron_job_clear(&d->job);
	memset(d->seen, 0, sizeof(d->seen));
	memset(d->relative, 0, sizeof(d->relative));
}

const model_jobdef_alias model_jobdef_aliases[MODEL_JK_NALIASES] = {
	{"jitter", MODEL_JK_RETRY_JITTER}, /* until issue 28: a retry's jitter was all there was */
};

const model_jobdef_key *model_jobdef_find(const char *name)
{
	for (const model_jobdef_key *k = model_jobdef_keys; k->name; k++)
		if (strcmp(k->name, name) == 0 ||
		    (k->snake && strcmp(k->snake, name) == 0))
			return k;
	for (size_t i = 0; i < MODEL_JK_NALIASES; i++)
		if (strcmp(model_jobdef_aliases[i].name, name) == 0)
			return model_jobdef_key_of(model_jobdef_aliases[i].id);
	return NULL;
}

const model_jobdef_key *model_jobdef_key_of(model_jobdef_id id)
{
	return id >= 0 && id < MODEL_JK__COUNT ? &model_jobdef_keys[id] : NULL; /* __NONE is -1 */
}

const char *model_jobdef_label(const model_jobdef *d, const model_jobdef_key *k,
			       char *buf, size_t len)
{
	if (d->cli && k->id == MODEL_JK_COMMAND)
		snprintf(buf, len, "-- COMMAND");
	else if (d->cli)
		snprintf(buf, len, "--%s", k->name);
	else
		snprintf(buf, len, "key '%s'", k->name);
	return buf;
}

/* Prefix err's message with the key's label: "--every: duration ...". */
static int keyed(const model_jobdef *d, const model_jobdef_key *k,
		 dbcron_err *err, int code)
{
	char label[64], reason[sizeof(err->msg)];
	if (!err)
		return code;
	dbcron__textf(reason, sizeof(reason), "%s", err->msg);
	/* "--retries 'abc': expected..." reads as the command line did */
	return dbcron_err_set(err, code, "%s%s%s", model_jobdef_label(d, k, label, sizeof(label)),
			      d->cli && reason[0] == '\'' ? " " : ": ", reason);
}

static int replace_str(char **slot, const char *v, dbcron_err *err)
{
	char *s = dbcron__strdup(v);
	if (!s)
		return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory");
	dbcron__free(*slot);
	*slot = s;
	return DBCRON_OK;
}

/* One more "KEY=VALUE" for the job's env; a name given before is refused
 * (which one wins would be a guess). */
static int add_env(dbcron_job *j, const char *kv, dbcron_err *err)
{
	int rc = runas_check_env(kv, err);
	if (rc)
		return rc;
	size_t klen = strcspn(kv, "=");
	for (int i = 0; i < j->envc; i++)
		if (strncmp(j->env[i], kv, klen) == 0 && j->env[i][klen] == '=')
			return dbcron_err_set(err, DBCRON_EINVAL, "'%.*s' is given twice", (int)klen, kv);
	if (j->envc >= RUNAS_ENV_MAX)
		return dbcron_err_set(err, DBCRON_EINVAL, "more than %d variables", RUNAS_ENV_MAX);
	char **v = dbcron__realloc(j->env, ((size_t)j->envc + 2) * sizeof(char *));
	if (!v)
		return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory");
	j->env = v;
	if (!(v[j->envc] = dbcron__strdup(kv)))
		return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory");
	v[++j->envc] = NULL;
	return DBCRON_OK;
}

/* item appended to a one-a-line list (targets, headers, tags). */
static int list_append(char **list, const char *item, dbcron_err *err)
{
	size_t have = *list ? strlen(*list) : 0;
	char *s = dbcron__realloc(*list, have + strlen(item) + 2);
	if (!s)
		return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory");
	if (have)
		s[have++] = '\n';
	memcpy(s + have, item, strlen(item) + 1);
	*list = s;
	return DBCRON_OK;
}

/* One more reaction target for a list (one a line); a target given
 * twice is refused (it would be one event, model/target.h). */
static int add_target(char **list, const char *t, dbcron_err *err)
{
	int rc = model_target_check(t, NULL, err);
	if (rc)
		return rc;
	if (model_targets_has(*list, t, strlen(t)))
		return dbcron_err_set(err, DBCRON_EINVAL, "'%.200s' is given twice", t);
	return list_append(list, t, err);
}

/* One more request header for an HTTP job's list (one a line). */
static int add_header(char **list, const char *h, dbcron_err *err)
{
	int rc = exec_http_check_header(h, err);
	return rc ? rc : list_append(list, h, err);
}

/* A tag (issue 28 item 3) added to the list, once. */
static int add_tag(char **list, const char *t, dbcron_err *err)
{
	int rc = model_tag_check(t, err);
	if (rc)
		return rc;
	if (model_tags_has(*list, t))
		return dbcron_err_set(err, DBCRON_EINVAL, "tag '%s' is given twice", t);
	return list_append(list, t, err);
}

/* An octal umask as chmod writes it: "027", "0022". */
static int set_umask(dbcron_job *j, const char *v, dbcron_err *err)
{
	size_t n = strlen(v);
	if (n < 1 || n > 4 || strspn(v, "01234567") != n)
		return dbcron_err_set(err, DBCRON_EINVAL, "'%s': expected an octal umask such as 027",
				      v);
	long m = strtol(v, NULL, 8);
	int rc = runas_check_umask(m, err);
	if (!rc)
		j->umask = (int)m;
	return rc;
}

static int choice(const char *v, int parsed, const char *choices,
		  dbcron_err *err)
{
	if (parsed < 0)
		return dbcron_err_set(err, DBCRON_EINVAL, "'%s': expected %s", v, choices);
	return DBCRON_OK;
}

static int set_schedule(model_jobdef *d, dbcron_sched_kind kind, const char *v,
			dbcron_err *err)
{
	d->job.kind = kind;
	return replace_str(&d->job.spec, v, err);
}

/* An INT key in its range; an ENUM or UMASK key as the value its text
 * would give (a struct's member as it is). */
static int set_int_value(model_jobdef *d, const model_jobdef_key *k,
			 long long v, dbcron_err *err)
{
	const model_field *f = model_jobdef_field(k);
	const char *name;
	int rc;
	if (!f)
		return dbcron_err_set(err, DBCRON_EINTERNAL, "not an integer key");
	switch (f->codec) {
	case MODEL_FC_INT:
		if (v < f->args.lo || v > f->args.hi)
			return dbcron_err_set(err, DBCRON_EINVAL, "%lld is out of range %lld-%lld", v,
					      f->args.lo, f->args.hi);
		break;
	case MODEL_FC_ENUM:
		/* a value is one its name parses back to */
		name = v >= INT_MIN && v <= INT_MAX ? f->args.name((int)v) : NULL;
		if (!name || f->args.parse(name) != v)
			return dbcron_err_set(err, DBCRON_EINVAL, "%lld: expected %s", v,
					      f->args.what);
		break;
	case MODEL_FC_UMASK:
		if ((rc = runas_check_umask(v < LONG_MIN || v > LONG_MAX ? -1 : (long)v, err)))
			return rc;
		break;
	case MODEL_FC_SEED:
		/* any value a signed BIGINT holds that is not "unset" */
		if (v < 0)
			return dbcron_err_set(err, DBCRON_EINVAL, "%lld: expected 0 or more", v);
		*(int64_t *)model_field_ptr(&d->job, f) = (int64_t)v;
		return DBCRON_OK;
	default:
		return dbcron_err_set(err, DBCRON_EINTERNAL, "not an integer key");
	}
	*(int *)model_field_ptr(&d->job, f) = (int)v;
	return DBCRON_OK;
}

/* A DUR key's milliseconds by the range its text would be held to, or a
 * TIME key's absolute instant. */
static int set_ms_value(model_jobdef *d, const model_jobdef_key *k, int64_t ms,
			dbcron_err *err)
{
	const model_field *f = model_jobdef_field(k);
	if (!f || (f->codec != MODEL_FC_DUR && f->codec != MODEL_FC_TIME))
		return dbcron_err_set(err, DBCRON_EINTERNAL, "not a duration or time key");
	/* the codes and words of the text's parser */
	if (ms < 0)
		return dbcron_err_set(err, DBCRON_EPARSE, "%" PRId64 " ms: must not be negative",
				      ms);
	if (f->codec == MODEL_FC_DUR && ms == 0 && !f->args.zero)
		return dbcron_err_set(err, DBCRON_EPARSE, "duration '0s': must be greater than zero");
	if (f->codec == MODEL_FC_DUR && ms > DBCRON_DURATION_MAX)
		return dbcron_err_set(err, DBCRON_EPARSE, "duration %" PRId64 " ms: too large", ms);
	d->relative[k->id] = false;
	*(int64_t *)model_field_ptr(&d->job, f) = ms;
	return DBCRON_OK;
}

/* More names for a NEEDS job (comma-separated, repeatable): each by the
 * job-name rule, a name given twice kept once.  Whether they exist and
 * make no cycle is the store's to say (store_job_put). */
static int add_needs(model_jobdef *d, const char *v, dbcron_err *err)
{
	char name[256], have[256];
	const char *p = v;
	int rc, n = 0;
	if (d->job.kind != DBCRON_SCHED_NEEDS && (rc = set_schedule(d, DBCRON_SCHED_NEEDS, "", err)))
		return rc;
	while (model_needs_next(&p, name, sizeof(name))) {
		n++;
		if ((rc = dbcron__name_check("needed job name", name, false, err)))
			return rc;
		bool dup = false;
		for (const char *q = d->job.spec; !dup && model_needs_next(&q, have, sizeof(have));)
			dup = strcmp(have, name) == 0;
		if (dup)
			continue;
		size_t l = strlen(d->job.spec);
		char *s = dbcron__realloc(d->job.spec, l + strlen(name) + 2);
		if (!s)
			return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory");
		snprintf(s + l, strlen(name) + 2, "%s%s", l ? "," : "", name);
		d->job.spec = s;
	}
	if (!n)
		return dbcron_err_set(err, DBCRON_EINVAL, "'%s': expected job names, e.g. a,b", v);
	return DBCRON_OK;
}

/* The schedule hook: the five keys of the one schedule. */
static int set_sched(model_jobdef *d, const model_jobdef_key *k, const char *v,
		     dbcron_err *err)
{
	int64_t ms;
	int rc;
	switch (k->id) {
	case MODEL_JK_CRON: {
		dbcron_cron *c = NULL;
		/* the syntax only: H's value comes from the job's seed, which
		 * is chosen when the job is written (app/spread.c) */
		rc = dbcron_cron_parse_seeded(v, 0, &c, err);
		if (rc && err) {
			/* the engine's message names the field; add the text */
			char reason[sizeof(err->msg)];
			dbcron__textf(reason, sizeof(reason), "%s", err->msg);
			return dbcron_err_set(err, rc, "'%s': %s", v, reason);
		}
		if (rc)
			return rc;
		dbcron_cron_free(c);
		return set_schedule(d, DBCRON_SCHED_CRON, v, err);
	}
	case MODEL_JK_EVERY:
	case MODEL_JK_AFTER:
		rc = dbcron__parse_duration(v, 0, &ms, err);
		if (rc)
			return rc;
		d->job.interval_ms = ms;
		return set_schedule(d, k->id == MODEL_JK_EVERY ? DBCRON_SCHED_EVERY
							 : DBCRON_SCHED_AFTER,
				    v, err);
	case MODEL_JK_AT:
		/* syntax only here; "now" is the database's, resolved later */
		rc = dbcron__parse_time(v, 0, &ms, err);
		if (rc)
			return rc;
		return set_schedule(d, DBCRON_SCHED_AT, v, err);
	case MODEL_JK_NEEDS:
		return add_needs(d, v, err);
	default:
		return dbcron_err_set(err, DBCRON_EINTERNAL, "not a schedule key");
	}
}

static int set_tz(dbcron_job *j, const char *v, dbcron_err *err)
{
	dbcron_tz *tz = NULL;
	/* the zone layer's message says what is wrong: an unknown name or bad
	 * zone data ("zone 'X': ...") */
	int rc = dbcron_tz_open(v, &tz, err);
	if (rc)
		return rc;
	dbcron_tz_free(tz);
	if (!*v) {
		dbcron__free(j->tz);
		j->tz = NULL;
		return DBCRON_OK;
	}
	return replace_str(&j->tz, v, err);
}

/* An instant; "now" and "now+DUR" are kept as an offset until the
 * database clock is known (model_jobdef_finish). */
static int set_time(model_jobdef *d, const model_jobdef_key *k, const model_field *f,
		    const char *v, dbcron_err *err)
{
	int64_t ms;
	int rc = dbcron__parse_time(v, 0, &ms, err);
	if (rc)
		return rc;
	d->relative[k->id] = strncmp(v, "now", 3) == 0;
	d->offset[k->id] = ms;
	*(int64_t *)model_field_ptr(&d->job, f) = ms;
	return DBCRON_OK;
}

/* Value checks that need no clock and no database, by the row's codec. */
static int set_text(model_jobdef *d, const model_jobdef_key *k, const char *v,
		    dbcron_err *err)
{
	const model_field *f = model_jobdef_field(k);
	dbcron_job *j = &d->job;
	int64_t ms;
	int rc, p;

	if (!f)
		return dbcron_err_set(err, DBCRON_EINTERNAL, "not a key");
	void *slot = model_field_ptr(j, f);
	switch (f->codec) {
	case MODEL_FC_NAME:
	case MODEL_FC_TEXT:
		return replace_str(slot, v, err);
	case MODEL_FC_SCHED:
		return set_sched(d, k, v, err);
	case MODEL_FC_TZ:
		return set_tz(j, v, err);
	case MODEL_FC_ENUM:
		p = f->args.parse(v);
		if ((rc = choice(v, p, f->args.what, err)))
			return rc;
		*(int *)slot = p;
		return DBCRON_OK;
	case MODEL_FC_INT:
	case MODEL_FC_SEED: {
		char *end;
		errno = 0;
		long long n = strtoll(v, &end, 10);
		if (!*v || *end || errno)
			return dbcron_err_set(err, DBCRON_EINVAL, "'%s': expected an integer", v);
		return set_int_value(d, k, n, err);
	}
	case MODEL_FC_DUR:
		/* zero is meaningful for some: no timeout, every late fire misfires */
		rc = dbcron__parse_duration(v, f->args.zero, &ms, err);
		if (rc)
			return rc;
		*(int64_t *)slot = ms;
		return DBCRON_OK;
	case MODEL_FC_TIME:
		return set_time(d, k, f, v, err);
	case MODEL_FC_HANDLER:
		/* any name: whether a process knows it is model_jobdef_check_handler's */
		if (!*v)
			return dbcron_err_set(err, DBCRON_EINVAL, "empty handler name");
		j->executor = DBCRON_EXEC_HANDLER;
		return replace_str(&j->handler, v, err);
	case MODEL_FC_SQL:
		/* the statement's own checks (placeholders against --params)
		 * are the executor's, at validation */
		if (!v[strspn(v, " \t\r\n")])
			return dbcron_err_set(err, DBCRON_EINVAL, "empty statement");
		j->executor = DBCRON_EXEC_SQL;
		return replace_str(&j->sql, v, err);
	case MODEL_FC_ACCOUNT:
		rc = runas_check_name(f->args.what, v, err);
		return rc ? rc : replace_str(slot, v, err);
	case MODEL_FC_PATH:
		rc = runas_check_path(f->args.what, v, err);
		return rc ? rc : replace_str(slot, v, err);
	case MODEL_FC_ENV:
		return add_env(j, v, err);
	case MODEL_FC_UMASK:
		return set_umask(j, v, err);
	case MODEL_FC_TARGET:
		return add_target(slot, v, err);
	case MODEL_FC_HTTP:
		if ((rc = exec_http_check_target(v, err)))
			return rc;
		j->executor = DBCRON_EXEC_HTTP;
		return replace_str(slot, v, err);
	case MODEL_FC_HEADER:
		return add_header(slot, v, err);
	case MODEL_FC_EXPECT:
		rc = exec_http_check_expect(v, err);
		return rc ? rc : replace_str(slot, v, err);
	case MODEL_FC_TAGS:
		return add_tag(slot, v, err);
	case MODEL_FC_PARAMS:
		rc = model_params_decl_check(v, err);
		return rc ? rc : replace_str(slot, v, err);
	default:
		return dbcron_err_set(err, DBCRON_EINTERNAL, "not a text value");
	}
}

static int mark_seen(model_jobdef *d, const model_jobdef_key *k,
		     dbcron_err *err)
{
	if (d->seen[k->id] && k->type != MODEL_JD_LIST)
		return dbcron_err_set(err, DBCRON_EINVAL, "given twice");
	d->seen[k->id] = true;
	return DBCRON_OK;
}

int model_jobdef_set_text(model_jobdef *d, const model_jobdef_key *k,
			  const char *value, dbcron_err *err)
{
	int rc = mark_seen(d, k, err);
	if (!rc)
		rc = set_text(d, k, value, err);
	return rc ? keyed(d, k, err, rc) : DBCRON_OK;
}

int model_jobdef_set_int(model_jobdef *d, const model_jobdef_key *k,
			 long long v, dbcron_err *err)
{
	int rc = mark_seen(d, k, err);
	if (!rc)
		rc = set_int_value(d, k, v, err);
	return rc ? keyed(d, k, err, rc) : DBCRON_OK;
}

int model_jobdef_set_ms(model_jobdef *d, const model_jobdef_key *k, int64_t ms,
			dbcron_err *err)
{
	int rc = mark_seen(d, k, err);
	if (!rc)
		rc = set_ms_value(d, k, ms, err);
	return rc ? keyed(d, k, err, rc) : DBCRON_OK;
}

int model_jobdef_set_bool(model_jobdef *d, const model_jobdef_key *k, bool v,
			  dbcron_err *err)
{
	int rc = mark_seen(d, k, err);
	if (rc)
		return keyed(d, k, err, rc);
	const model_field *f = model_jobdef_field(k);
	if (!f || f->codec != MODEL_FC_BOOL)
		return keyed(d, k, err, dbcron_err_set(err, DBCRON_EINTERNAL, "not a flag"));
	*(bool *)model_field_ptr(&d->job, f) = v;
	return DBCRON_OK;
}

int model_jobdef_set_argv(model_jobdef *d, char *const *argv, int argc,
			  dbcron_err *err)
{
	const model_jobdef_key *k = model_jobdef_key_of(MODEL_JK_COMMAND);
	int rc = mark_seen(d, k, err);
	if (rc)
		return keyed(d, k, err, rc);
	dbcron_job *j = &d->job;
	char **v = dbcron__calloc((size_t)argc + 1, sizeof(char *));
	if (!v)
		return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory");
	for (int i = 0; i < argc; i++) {
		v[i] = dbcron__strdup(argv[i]);
		if (!v[i]) {
			for (int f = 0; f < i; f++)
				dbcron__free(v[f]);
			dbcron__free(v);
			return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory");
		}
	}
	j->argv = v;
	j->argc = argc;
	return DBCRON_OK;
}

/* A struct's list (reaction targets, request headers), one item a line,
 * each set as a flag is, whole (the item's own check says when it is too
 * long). */
static int set_targets(model_jobdef *d, const model_jobdef_key *k, const char *list,
		       dbcron_err *err)
{
	const char *t;
	size_t n;
	while ((t = model_targets_next(&list, &n))) {
		char *one = dbcron__strndup(t, n);
		if (!one)
			return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory");
		int rc = model_jobdef_set_text(d, k, one, err);
		dbcron__free(one);
		if (rc)
			return rc;
	}
	return DBCRON_OK;
}

/* One row of a job struct by its codec, typed where the struct is. */
static int set_from_job(model_jobdef *d, const model_jobdef_key *k, const model_field *f,
			const dbcron_job *j, dbcron_err *err)
{
	const void *p = model_field_cptr(j, f);
	const char *text = f->store == MODEL_FS_TEXT || f->store == MODEL_FS_HANDLER
				   ? *(char *const *)p : NULL;
	int rc;
	switch (f->codec) {
	case MODEL_FC_SCHED:
		return model_jobdef_set_text(d, k, j->spec ? j->spec : "", err);
	case MODEL_FC_TZ:
		/* unset is UTC, given as such, as a listed job shows it */
		return model_jobdef_set_text(d, k, text ? text : "UTC", err);
	case MODEL_FC_HANDLER:
	case MODEL_FC_SQL:
		return model_jobdef_set_text(d, k, text ? text : "", err);
	case MODEL_FC_INT:
		if (f->args.omit && *(const int *)p == 0)
			return DBCRON_OK;
		return model_jobdef_set_int(d, k, *(const int *)p, err);
	case MODEL_FC_ENUM:
		return model_jobdef_set_int(d, k, *(const int *)p, err);
	case MODEL_FC_UMASK:
		/* -1 is the node's; the mode bits only, as they are written */
		return j->umask < 0 ? DBCRON_OK : model_jobdef_set_int(d, k, j->umask & 0777, err);
	case MODEL_FC_DUR:
		if (f->args.omit && *(const int64_t *)p == 0)
			return DBCRON_OK;
		return model_jobdef_set_ms(d, k, *(const int64_t *)p, err);
	case MODEL_FC_SEED:
		return *(const int64_t *)p < 0 ? DBCRON_OK
					       : model_jobdef_set_int(d, k, *(const int64_t *)p, err);
	case MODEL_FC_TIME:
		return *(const int64_t *)p < 0 ? DBCRON_OK
					       : model_jobdef_set_ms(d, k, *(const int64_t *)p, err);
	case MODEL_FC_BOOL:
		if (f->args.omit && !*(const bool *)p)
			return DBCRON_OK;
		return model_jobdef_set_bool(d, k, *(const bool *)p, err);
	case MODEL_FC_ARGV:
		for (int i = 0; j->argv && i < j->argc; i++)
			if (!j->argv[i])
				return keyed(d, k, err,
					     dbcron_err_set(err, DBCRON_EINVAL, "word %d is NULL", i));
		if (!j->argv || j->argc <= 0)
			return keyed(d, k, err,
				     dbcron_err_set(err, DBCRON_EINVAL,
						    "expected a non-empty array of strings"));
		return model_jobdef_set_argv(d, j->argv, j->argc, err);
	case MODEL_FC_ENV:
		for (int i = 0; j->env && i < j->envc; i++) {
			if (!j->env[i])
				return keyed(d, k, err, dbcron_err_set(err, DBCRON_EINVAL,
								       "element %d is NULL", i));
			if ((rc = model_jobdef_set_text(d, k, j->env[i], err)))
				return rc;
		}
		return DBCRON_OK;
	case MODEL_FC_TARGET:
	case MODEL_FC_HEADER:
	case MODEL_FC_TAGS: /* one a line, as targets */
		return set_targets(d, k, text, err);
	default:
		/* the name, and text keys: unset ones are not given */
		return text ? model_jobdef_set_text(d, k, text, err) : DBCRON_OK;
	}
}

int model_jobdef_from_job(model_jobdef *d, const dbcron_job *j, dbcron_err *err)
{
	bool sched = false;
	if (!j->name)
		return dbcron_err_set(err, DBCRON_EINVAL, "a job needs a name");
	/* every keyed row in the job's scope, in table order, as the JSON
	 * codec writes them; the schedule's rows are one key, the kind's */
	for (size_t i = 0; i < MODEL_NFIELDS; i++) {
		const model_field *f = &model_fields[i];
		model_jobdef_id id = f->key;
		if (f->codec == MODEL_FC_SCHED) {
			if (sched)
				continue;
			sched = true;
			id = model_sched_key(j->kind);
		}
		if (id == MODEL_JK__NONE || !model_field_in_scope(j, f))
			continue;
		int rc = set_from_job(d, model_jobdef_key_of(id), f, j, err);
		if (rc)
			return rc;
	}
	return model_jobdef_check(d, err);
}

/* A ${param.KEY} of an HTTP job's text must be a key its declaration
 * names (a job without one takes any key). */
typedef struct ph_ctx {
	const model_jobdef *d;
	dbcron_err *err;
} ph_ctx;

static int param_declared(void *ctx, const char *name, size_t len)
{
	const model_jobdef *d = ((ph_ctx *)ctx)->d;
	char kv[MODEL_PARAM_KEY_MAX + 8], *json = NULL;
	if (len <= 6 || strncmp(name, "param.", 6) != 0 || !d->job.params)
		return DBCRON_OK;
	size_t klen = len - 6 > MODEL_PARAM_KEY_MAX ? MODEL_PARAM_KEY_MAX : len - 6;
	snprintf(kv, sizeof(kv), "%.*s=", (int)klen, name + 6);
	const char *one[1] = {kv};
	dbcron_err *err = ((ph_ctx *)ctx)->err;
	int rc = model_params_for_run(d->job.name ? d->job.name : "", d->job.params, one, 1, &json,
				      err);
	dbcron__free(json);
	return rc;
}

/* The HTTP job's placeholders against its declared parameters. */
static int check_http_params(model_jobdef *d, dbcron_err *err)
{
	static const model_jobdef_id ids[] = {MODEL_JK_HTTP, MODEL_JK_HEADER, MODEL_JK_BODY};
	const char *texts[] = {d->job.http, d->job.http_headers, d->job.http_body};
	ph_ctx c = {d, err};
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		int rc = exec_http_placeholders(texts[i], param_declared, &c, err);
		if (rc)
			return keyed(d, model_jobdef_key_of(ids[i]), err, rc);
	}
	return DBCRON_OK;
}

/* A key of how a command runs given to a job without a command: refused,
 * but for an HTTP job's env-file.  why: where the job runs instead. */
static int check_runas_keys(model_jobdef *d, bool http, const char *why, dbcron_err *err)
{
	char l1[64];
	for (int id = 0; id < MODEL_JK__COUNT; id++) {
		const model_jobdef_key *k = model_jobdef_key_of((model_jobdef_id)id);
		if (!d->seen[id] || model_jobdef_field(k)->scope != MODEL_SCOPE_RUNAS ||
		    (http && id == MODEL_JK_ENV_FILE))
			continue;
		return dbcron_err_set(err, DBCRON_EINVAL,
				      d->cli ? "%s is only for a command (%s)"
					     : "%s is only for 'command' (%s)",
				      model_jobdef_label(d, k, l1, sizeof(l1)), why);
	}
	return DBCRON_OK;
}

/* The keys only a job of one kind takes (scope HTTP or SQL), refused on
 * a job of another kind: the first one given. */
static int check_kind_keys(model_jobdef *d, model_field_scope scope, const char *owner,
			   dbcron_err *err)
{
	char l1[64];
	for (int id = 0; id < MODEL_JK__COUNT; id++)
		if (d->seen[id] &&
		    model_jobdef_field(model_jobdef_key_of((model_jobdef_id)id))->scope == scope)
			return dbcron_err_set(err, DBCRON_EINVAL,
					      d->cli ? "%s is only for --%s" : "%s is only for '%s'",
					      model_jobdef_label(d, model_jobdef_key_of((model_jobdef_id)id),
								 l1, sizeof(l1)),
					      owner);
	return DBCRON_OK;
}

/* Exactly one of a command, a handler, an HTTP call and a statement. */
static int check_one_executor(model_jobdef *d, dbcron_err *err)
{
	bool cmd = d->seen[MODEL_JK_COMMAND] && d->job.argc > 0;
	bool http = d->seen[MODEL_JK_HTTP], handler = d->seen[MODEL_JK_HANDLER];
	bool sql = d->seen[MODEL_JK_SQL];
	const char *other = handler ? (d->cli ? "--handler" : "'handler'")
			  : d->seen[MODEL_JK_COMMAND] ? (d->cli ? "a command after --" : "'command'")
			  : NULL;
	if (http && (other || sql))
		return dbcron_err_set(err, DBCRON_EINVAL,
				      d->cli ? "both --http and %s: give one"
					     : "both 'http' and %s: give one",
				      other ? other : (d->cli ? "--sql" : "'sql'"));
	if (handler && d->seen[MODEL_JK_COMMAND])
		return dbcron_err_set(err, DBCRON_EINVAL, d->cli
			? "both --handler and a command after --: give one"
			: "both 'handler' and 'command': give one");
	if (sql && other)
		return dbcron_err_set(err, DBCRON_EINVAL,
				      d->cli ? "--sql with %s: give one" : "'sql' with %s: give one",
				      other);
	if (!handler && !cmd && !http && !sql)
		return dbcron_err_set(err, DBCRON_EINVAL, d->cli
			? "no command: give -- COMMAND [ARGS...], --handler NAME, --http METHOD URL or --sql STATEMENT"
			: "no command: give \"command\": [\"prog\", \"arg\"...], \"handler\", \"http\" or \"sql\"");
	if (cmd && !*d->job.argv[0])
		return dbcron_err_set(err, DBCRON_EINVAL, "the command is an empty string");
	return DBCRON_OK;
}

/* What the job runs: exactly one of a command, a handler, an HTTP call
 * and a statement, and only the keys that go with it. */
static int check_executor(model_jobdef *d, dbcron_err *err)
{
	bool http = d->seen[MODEL_JK_HTTP], handler = d->seen[MODEL_JK_HANDLER];
	bool sql = d->seen[MODEL_JK_SQL];
	int rc = check_one_executor(d, err);
	if (rc)
		return rc;
	if (d->seen[MODEL_JK_ARG] && !handler)
		return dbcron_err_set(err, DBCRON_EINVAL, d->cli
			? "--arg is only for --handler (a command takes its arguments after --)"
			: "'arg' is only for 'handler' (a command takes its arguments in 'command')");
	if (d->seen[MODEL_JK_SQL_DB_FILE] && !sql)
		return dbcron_err_set(err, DBCRON_EINVAL, d->cli
			? "--sql-db-file is only for --sql" : "'sql_db_file' is only for 'sql'");
	if (!http && (rc = check_kind_keys(d, MODEL_SCOPE_HTTP, "http", err)))
		return rc;
	/* a handler and an HTTP call run inside the node, a statement on a
	 * database: no process to give a user or a directory to */
	if (handler || http || sql)
		rc = check_runas_keys(d, http,
				      sql ? "a statement runs on a database"
				      : http ? "an HTTP job runs inside the node"
					     : "a handler runs inside the node",
				      err);
	return rc || !http ? rc : check_http_params(d, err);
}

int model_jobdef_check(model_jobdef *d, dbcron_err *err)
{
	static const model_jobdef_id scheds[] = {
		MODEL_JK_CRON, MODEL_JK_EVERY, MODEL_JK_AFTER, MODEL_JK_AT, MODEL_JK_NEEDS,
	};
	const char *first = NULL;
	char l1[64], l2[64];

	for (size_t i = 0; i < sizeof(scheds) / sizeof(scheds[0]); i++) {
		if (!d->seen[scheds[i]])
			continue;
		const model_jobdef_key *k = model_jobdef_key_of(scheds[i]);
		if (first)
			return dbcron_err_set(err, DBCRON_EINVAL,
					      "two schedules (%s and %s): give exactly one of cron, every, after, at, "
					      "needs (a job with needs has no schedule of its own)",
					      first, model_jobdef_label(d, k, l2, sizeof(l2)));
		first = model_jobdef_label(d, k, l1, sizeof(l1));
	}
	if (!first)
		return dbcron_err_set(err, DBCRON_EINVAL, d->cli
			? "no schedule: give one of --cron EXPR, --every DUR, --after DUR, --at TIME, --needs JOBS"
			: "no schedule: give one of the keys cron, every, after, at, needs");
	return check_executor(d, err);
}

int model_jobdef_check_handler(const dbcron_job *j, bool strict, char *warn, size_t wlen,
			       dbcron_err *err)
{
	if (warn && wlen)
		warn[0] = '\0';
	if (j->executor != DBCRON_EXEC_HANDLER || !j->handler || dbcron_handler_exists(j->handler))
		return DBCRON_OK;
	if (strict)
		return dbcron_err_set(err, DBCRON_EINVAL,
				      "unknown handler '%s' (built in: noop, sleep; not refused "
				      "without --strict, for nodes that register it)",
				      j->handler);
	if (warn && wlen)
		snprintf(warn, wlen,
			 "handler '%s' is not built in: only nodes that register it run job '%s'",
			 j->handler, j->name ? j->name : "");
	return DBCRON_OK;
}

int model_jobdef_check_host(const model_jobdef *d, dbcron_err *err)
{
	/* a SQL job's database file: readable and a URL here, as on a node */
	if (d->job.executor == DBCRON_EXEC_SQL && d->job.sql_db_file) {
		int rc = exec_sql_check_db_file(d->job.sql_db_file, err);
		if (rc)
			return keyed(d, model_jobdef_key_of(MODEL_JK_SQL_DB_FILE), err, rc);
	}
	static const model_jobdef_id ids[] = {MODEL_JK_USER, MODEL_JK_GROUP};
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		const char *v = ids[i] == MODEL_JK_USER ? d->job.user : d->job.group;
		const char *what = ids[i] == MODEL_JK_USER ? "user" : "group";
		if (!v)
			continue;
		dbcron_err why = {0};
		int rc = runas_lookup(what, v, &why);
		if (rc == DBCRON_ENOTFOUND)
			dbcron_err_set(err, rc, "'%s': no such %s on this host", v, what);
		else if (rc)
			dbcron_err_set(err, rc, "%s", why.msg);
		if (rc)
			return keyed(d, model_jobdef_key_of(ids[i]), err, rc);
	}
	return DBCRON_OK;
}

int model_jobdef_finish(model_jobdef *d, int64_t now_ms, const dbcron_job *prev,
			dbcron_err *err)
{
	dbcron_job *j = &d->job;
	int rc = model_jobdef_check(d, err);
	if (rc)
		return rc;
	if (prev && !d->seen[MODEL_JK_PAUSED])
		j->paused = prev->paused;
	if (prev) {
		j->id = prev->id;
		j->created_ms = prev->created_ms;
	}
	for (int id = 0; id < MODEL_JK__COUNT; id++)
		if (d->relative[id])
			*(int64_t *)model_field_ptr(
				j, model_jobdef_field(model_jobdef_key_of((model_jobdef_id)id))) =
				now_ms + d->offset[id];
	if ((rc = model_job_series(j, now_ms, prev, err)))
		return keyed(d, model_jobdef_key_of(MODEL_JK_AT), err, rc);
	if ((rc = dbcron_job_validate(j, err)))
		return rc;
	return model_job_first_fire(j, now_ms, prev, err);
}

const char *model_schedule_text(const dbcron_job *job, char *buf, size_t len)
{
	char t[64];
	/* "at now+5m" would be stale the moment it was stored */
	if (job->kind == DBCRON_SCHED_AT && job->at_ms >= 0)
		snprintf(buf, len, "at %s", model_time_text(job->at_ms, t, sizeof(t)));
	else
		snprintf(buf, len, "%s %s", dbcron_sched_kind_name(job->kind),
			 job->spec ? job->spec : "");
	return buf;
}

const char *model_time_text(int64_t ms, char *buf, size_t len)
{
	/* -1 is "unset" everywhere in dbcron; no fire is ever before 1970 */
	if (ms < 0) {
		snprintf(buf, len, "-");
		return buf;
	}
	dbcron__format_rfc3339(ms, 0, ms % 1000 != 0, buf, len);
	return buf;
}

void model_jobdef_help(FILE *f, model_field_scope scope)
{
	for (const model_jobdef_key *k = model_jobdef_keys; k->name; k++) {
		const model_field *fd = model_jobdef_field(k);
		if (!fd || fd->scope != scope || !fd->help || fd->codec == MODEL_FC_SCHED)
			continue;
		char flag[64];
		snprintf(flag, sizeof(flag), "--%s%s%s", k->name, *fd->meta ? " " : "", fd->meta);
		fprintf(f, "  %-23s ", flag);
		/* a help text goes on under its first line's column */
		for (const char *p = fd->help; *p; p++) {
			fputc(*p, f);
			if (*p == '\n')
				fprintf(f, "%26s", "");
		}
		fputc('\n', f);
	}
}
