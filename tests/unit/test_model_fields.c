/*
 * The job-field table (core/job_fields.h) and what is generated from it
 * (model/fields.c, jobdef.c, json.c): every field survives JSON, the one
 * change rule reports the keys a user knows, the key table and the help
 * follow the table, and the planner keeps a job's window (start_at,
 * end_at).  The store round trips are in store_conformance.h.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "full_job.h"
#include "model/json.h"
#include "model/rules.h"

/* 2026-01-02T03:04:05Z */
#define NOW 1767323045000LL

static void test_full_jobs_cover_every_field(void **state)
{
	(void)state;
	const char *missing = full_job_covers(MODEL_ROLE_NAME | MODEL_ROLE_DEF | MODEL_ROLE_STATE |
					      MODEL_ROLE_PLACE);
	if (missing)
		fail_msg("full_job.h leaves field '%s' at its default: set it there", missing);
}

/* model_diff_fn: the reported keys, "a,b,". */
static void keys_into(void *ctx, const model_field *f, model_jobdef_id key)
{
	(void)f;
	if (key != MODEL_JK__NONE) {
		strcat(ctx, model_jobdef_key_of(key)->name);
		strcat(ctx, ",");
	}
}

/* job -> its definition's JSON -> a definition: the same job, field by
 * field, for a command job and a handler job. */
static void test_json_round_trip_every_field(void **state)
{
	(void)state;
	static const char *const kinds[] = {"command", "handler", "HTTP", "SQL"};
	for (int h = 0; h < FULL_KINDS; h++) {
		dbcron_job j;
		model_jobdef d;
		dbcron_err err = {0};
		const char *name;
		char diff[1024] = "";
		full_job(&j, "rt", h);
		json_t *o = model_job_def_json(&j);
		assert_non_null(o);
		model_jobdef_init(&d, false);
		if (model_jobdef_from_json(&d, o, &name, &err))
			fail_msg("%s", err.msg);
		size_t n = model_job_diff(&j, &d.job, MODEL_ROLE_NAME | MODEL_ROLE_DEF |
						       MODEL_ROLE_STATE,
					  keys_into, diff);
		if (n)
			fail_msg("%s job: %zu fields differ after JSON: %s", kinds[h], n, diff);
		/* every keyed field of its kind was given */
		for (size_t i = 0; i < MODEL_NFIELDS; i++) {
			const model_field *f = &model_fields[i];
			bool other = !model_field_in_scope(&j, f);
			if (f->key != MODEL_JK__NONE && !other && !d.seen[f->key])
				fail_msg("key '%s' was not written", model_jobdef_key_of(f->key)->name);
		}
		json_decref(o);
		model_jobdef_clear(&d);
		dbcron_job_clear(&j);
	}
}

/* Changes that make a full job a bad definition, each refused alike by
 * both roads. */
static void bad_cron(dbcron_job *j)
{
	j->kind = DBCRON_SCHED_CRON;
	dbcron__free(j->spec);
	j->spec = dbcron__strdup("61 * * * *");
}
static void bad_retries(dbcron_job *j) { j->max_retries = 1001; }
static void bad_zone(dbcron_job *j)
{
	dbcron__free(j->tz);
	j->tz = dbcron__strdup("Mars/Olympus");
}
static void bad_env(dbcron_job *j)
{
	dbcron__free(j->env[1]);
	j->env[1] = dbcron__strdup("no equals sign");
}
static void bad_user(dbcron_job *j)
{
	dbcron__free(j->user);
	j->user = dbcron__strdup("a b");
}
static void no_command(dbcron_job *j)
{
	for (int i = 0; i < j->argc; i++) {
		dbcron__free(j->argv[i]);
		j->argv[i] = NULL;
	}
	j->argc = 0;
}
static void zero_base(dbcron_job *j) { j->retry_base_ms = 0; }
static void no_zone(dbcron_job *j)
{
	dbcron__free(j->tz);
	j->tz = NULL;
}
static void no_window(dbcron_job *j) { j->start_at = j->end_at = -1; }

/* The library's road (model_jobdef_from_job, typed, no JSON) against a
 * struct's JSON object (model_job_json read back): the same definition,
 * the same keys given, the same refusals. */
static void test_struct_reads_as_its_json(void **state)
{
	(void)state;
	static const struct {
		void (*change)(dbcron_job *);
		bool handler;
	} cases[] = {
		{NULL, false},       {NULL, true},        {no_zone, false},    {no_window, true},
		{bad_cron, false},   {bad_retries, true}, {bad_zone, false},   {bad_env, false},
		{bad_user, false},   {no_command, false}, {zero_base, false},
	};
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		dbcron_job j;
		model_jobdef a, b;
		dbcron_err ea = {0}, eb = {0};
		const char *name;
		char diff[1024] = "";
		full_job(&j, "st", cases[c].handler);
		if (cases[c].change)
			cases[c].change(&j);
		json_t *o = model_job_json(&j);
		assert_non_null(o);
		model_jobdef_init(&a, false);
		model_jobdef_init(&b, false);
		int ra = model_jobdef_from_job(&a, &j, &ea);
		int rb = model_jobdef_from_json(&b, o, &name, &eb);
		if (ra != rb)
			fail_msg("case %zu: struct %d (%s), JSON %d (%s)", c, ra, ea.msg, rb, eb.msg);
		if (ra)
			assert_string_equal(ea.msg, eb.msg);
		if (!ra && model_job_diff(&a.job, &b.job,
					  MODEL_ROLE_NAME | MODEL_ROLE_DEF | MODEL_ROLE_STATE,
					  keys_into, diff))
			fail_msg("case %zu: the two roads differ in %s", c, diff);
		for (int k = 0; !ra && k < MODEL_JK__COUNT; k++)
			if (a.seen[k] != b.seen[k] || a.relative[k] != b.relative[k])
				fail_msg("case %zu: key '%s' given by one road only", c,
					 model_jobdef_key_of((model_jobdef_id)k)->name);
		json_decref(o);
		model_jobdef_clear(&a);
		model_jobdef_clear(&b);
		dbcron_job_clear(&j);
	}
}

/* Each key's text through the CLI's road (set_text), then JSON again. */
static void test_flags_set_every_field(void **state)
{
	(void)state;
	dbcron_job j;
	full_job(&j, "fl", false);
	json_t *o = model_job_def_json(&j);
	model_jobdef d;
	dbcron_err err = {0};
	model_jobdef_init(&d, true);
	const char *key;
	json_t *v;
	json_object_foreach(o, key, v) {
		const model_jobdef_key *k = model_jobdef_find(key);
		assert_non_null(k);
		int rc;
		if (json_is_string(v))
			rc = model_jobdef_set_text(&d, k, json_string_value(v), &err);
		else if (json_is_integer(v))
			rc = model_jobdef_set_int(&d, k, json_integer_value(v), &err);
		else if (json_is_boolean(v))
			rc = model_jobdef_set_bool(&d, k, json_is_true(v), &err);
		else if (k->type == MODEL_JD_LIST) {
			rc = 0;
			for (size_t i = 0; !rc && i < json_array_size(v); i++)
				rc = model_jobdef_set_text(&d, k, json_string_value(json_array_get(v, i)),
							   &err);
		} else {
			rc = model_jobdef_set_argv(&d, j.argv, j.argc, &err);
		}
		if (rc)
			fail_msg("--%s: %s", key, err.msg);
	}
	char diff[1024] = "";
	if (model_job_diff(&j, &d.job, MODEL_ROLE_DEF | MODEL_ROLE_STATE, keys_into, diff))
		fail_msg("flags differ: %s", diff);
	json_decref(o);
	model_jobdef_clear(&d);
	dbcron_job_clear(&j);
}

static void test_diff_reports_keys(void **state)
{
	(void)state;
	dbcron_job a, b;
	char diff[256] = "";
	full_job(&a, "d", false);
	full_job(&b, "d", false);
	assert_int_equal(model_job_diff(&a, &b, MODEL_ROLE_DEF | MODEL_ROLE_STATE, NULL, NULL), 0);
	/* the place is not the definition */
	b.next_fire_at = 1;
	assert_int_equal(model_job_diff(&a, &b, MODEL_ROLE_DEF | MODEL_ROLE_STATE, NULL, NULL), 0);
	assert_int_equal(model_job_diff(&a, &b, MODEL_ROLE_PLACE, NULL, NULL), 1);
	/* one zone named two ways is one zone */
	dbcron__free(a.tz);
	dbcron__free(b.tz);
	a.tz = NULL;
	b.tz = dbcron__strdup("UTC");
	assert_int_equal(model_job_diff(&a, &b, MODEL_ROLE_DEF, NULL, NULL), 0);
	/* a new schedule kind names the old key and the new, in key order */
	dbcron__free(b.spec);
	b.kind = DBCRON_SCHED_CRON;
	b.spec = dbcron__strdup("* * * * *");
	b.interval_ms = 0;
	b.end_at = -1;
	model_job_diff(&a, &b, MODEL_ROLE_DEF, keys_into, diff);
	assert_string_equal(diff, "cron,every,end-at,");
	dbcron_job_clear(&a);
	dbcron_job_clear(&b);
}

static void test_key_table(void **state)
{
	(void)state;
	size_t n = 0;
	for (const model_jobdef_key *k = model_jobdef_keys; k->name; k++, n++) {
		assert_int_equal(k->id, (int)n);
		assert_non_null(model_jobdef_field(k));
		assert_ptr_equal(model_jobdef_find(k->name), k);
		if (k->snake)
			assert_ptr_equal(model_jobdef_find(k->snake), k);
	}
	assert_int_equal(n, MODEL_JK__COUNT);
	assert_ptr_equal(model_jobdef_field(model_jobdef_key_of(MODEL_JK_START_AT)),
			 &model_fields[MODEL_COL_start_at - 1]);
	/* the help has a line for every keyed field that has help */
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	model_jobdef_help(f, MODEL_SCOPE_ANY);
	model_jobdef_help(f, MODEL_SCOPE_RUNAS);
	fclose(f);
	assert_non_null(strstr(buf, "  --start-at TIME         no fire before TIME"));
	assert_non_null(strstr(buf, "  --end-at TIME           no fire after TIME"));
	assert_non_null(strstr(buf, "  --inherit-env           start from"));
	free(buf);
}

/* A definition of the JSON doc finished at NOW: DBCRON_OK or the code,
 * the message in err. */
static int define(model_jobdef *d, const char *doc, dbcron_err *err)
{
	const char *name;
	json_t *obj = json_loads(doc, 0, NULL);
	assert_non_null(obj);
	model_jobdef_init(d, false);
	int rc = model_jobdef_from_json(d, obj, &name, err);
	if (!rc)
		rc = model_jobdef_finish(d, NOW, NULL, err);
	json_decref(obj);
	return rc;
}

static void test_window_plans(void **state)
{
	(void)state;
	model_jobdef d;
	dbcron_err err = {0};
	int64_t next;

	/* cron: the first fire at or after start_at, none after end_at */
	if (define(&d, "{\"name\":\"w\",\"cron\":\"0 * * * *\",\"command\":[\"true\"],"
		       "\"start_at\":\"2026-01-02T05:00:00Z\",\"end_at\":\"2026-01-02T07:30:00Z\"}",
		   &err))
		fail_msg("%s", err.msg);
	assert_int_equal(d.job.next_fire_at, NOW - 3 * 3600000LL - 4 * 60000 - 5000 + 5 * 3600000LL);
	assert_int_equal(dbcron_job_next_fire(&d.job, d.job.next_fire_at, &next, &err), 1);
	assert_int_equal(next, d.job.next_fire_at + 3600000);
	assert_int_equal(dbcron_job_next_fire(&d.job, next, &next, &err), 1);
	assert_int_equal(dbcron_job_next_fire(&d.job, next, &next, &err), 0);
	model_jobdef_clear(&d);

	/* relative times against the database clock */
	if (define(&d, "{\"name\":\"w\",\"every\":\"10s\",\"command\":[\"true\"],"
		       "\"start_at\":\"now+1m\"}",
		   &err))
		fail_msg("%s", err.msg);
	assert_int_equal(d.job.start_at, NOW + 60000);
	assert_true(d.job.next_fire_at >= NOW + 60000 && d.job.next_fire_at < NOW + 70000);
	model_jobdef_clear(&d);

	/* an end in the past: never */
	if (define(&d, "{\"name\":\"w\",\"every\":\"10s\",\"command\":[\"true\"],"
		       "\"end_at\":\"2020-01-01T00:00:00Z\"}",
		   &err))
		fail_msg("%s", err.msg);
	assert_int_equal(d.job.next_fire_at, -1);
	model_jobdef_clear(&d);

	/* AT outside the window never fires; AFTER waits for the start */
	if (define(&d, "{\"name\":\"w\",\"at\":\"now+5m\",\"command\":[\"true\"],"
		       "\"start_at\":\"now+1h\"}",
		   &err))
		fail_msg("%s", err.msg);
	assert_int_equal(d.job.next_fire_at, -1);
	model_jobdef_clear(&d);
	if (define(&d, "{\"name\":\"w\",\"after\":\"5m\",\"command\":[\"true\"],"
		       "\"start_at\":\"now+1h\"}",
		   &err))
		fail_msg("%s", err.msg);
	assert_int_equal(d.job.next_fire_at, NOW + 3600000);
	model_followup fu = model_run_followup(&d.job, 1, DBCRON_RUN_SUCCEEDED, false, NOW);
	assert_int_equal(fu.job_next_fire_at, NOW + 3600000);
	model_jobdef_clear(&d);

	/* end before start: refused, both named */
	assert_int_equal(define(&d, "{\"name\":\"w\",\"every\":\"10s\",\"command\":[\"true\"],"
				    "\"start_at\":\"2030-01-01T00:00:00Z\","
				    "\"end_at\":\"2029-01-01T00:00:00Z\"}",
				&err),
			 DBCRON_EINVAL);
	assert_non_null(strstr(err.msg, "end-at 2029-01-01T00:00:00Z is before start-at "
					"2030-01-01T00:00:00Z"));
	model_jobdef_clear(&d);
}

/* A row without a key of its own (MODEL_JK__NONE, -1: the executor's
 * member) has no key: the diff hands it to callers that look its key up
 * (the audit trail), which read before the table when -1 passed the
 * bound (ASan, test_store_pg). */
static void test_no_key_is_null(void **state)
{
	(void)state;
	assert_null(model_jobdef_key_of(MODEL_JK__NONE));
	assert_null(model_jobdef_key_of(MODEL_JK__COUNT));
	assert_non_null(model_jobdef_key_of((model_jobdef_id)0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_key_is_null),
		cmocka_unit_test(test_full_jobs_cover_every_field),
		cmocka_unit_test(test_json_round_trip_every_field),
		cmocka_unit_test(test_struct_reads_as_its_json),
		cmocka_unit_test(test_flags_set_every_field),
		cmocka_unit_test(test_diff_reports_keys),
		cmocka_unit_test(test_key_table),
		cmocka_unit_test(test_window_plans),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
