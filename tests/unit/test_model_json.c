/* Jobs and runs <-> JSON (model/json.c): a listed job reads back as the
 * same definition, and a run's object has every field the run log
 * promises. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "model/json.h"

/* 2026-01-02T03:04:05Z */
#define NOW 1767323045000LL

/* A finished definition from a JSON document; the caller clears d. */
static void define(model_jobdef *d, const char *doc, const dbcron_job *prev,
		   int64_t now)
{
	dbcron_err err = {0};
	const char *name;
	json_t *obj = json_loads(doc, 0, NULL);
	assert_non_null(obj);
	model_jobdef_init(d, false);
	if (model_jobdef_from_json(d, obj, &name, &err) ||
	    model_jobdef_finish(d, now, prev, &err))
		fail_msg("%s: %s", doc, err.msg);
	json_decref(obj);
}

static void test_job_round_trip(void **state)
{
	(void)state;
	static const char *const docs[] = {
		"{\"name\": \"a\", \"every\": \"1h30m\", \"retries\": 5, \"paused\": true,"
		" \"command\": [\"echo\", \"hello\", \"two words\"]}",
		"{\"name\": \"b\", \"cron\": \"0 30 2 * * ?\", \"tz\": \"Europe/Berlin\","
		" \"misfire\": \"catch_up\", \"max_catchup\": 3, \"overlap\": \"replace\","
		" \"node-loss\": \"abandon\", \"jitter\": true, \"timeout\": \"1h\","
		" \"handler\": \"sleep\", \"arg\": \"100\"}",
		"{\"name\": \"c\", \"at\": \"now+5m\", \"misfire-threshold\": \"0s\", \"handler\": \"noop\"}",
		"{\"name\": \"d\", \"after\": \"30s\", \"retry-base\": \"2s\", \"retry-cap\": \"10s\","
		" \"command\": [\"/bin/sh\", \"-c\", \"exit 1\"]}",
		/* what the command runs as */
		"{\"name\": \"e\", \"every\": \"1m\", \"command\": [\"backup\"], \"user\": \"nobody\","
		" \"group\": \"nogroup\", \"cwd\": \"/srv\", \"env\": [\"A=1\", \"B=x=y\"],"
		" \"env_file\": \"/etc/dbcron/e.env\", \"umask\": \"027\", \"inherit-env\": true}",
	};
	for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
		model_jobdef orig, back;
		define(&orig, docs[i], NULL, NOW);
		orig.job.id = (int64_t)i + 1;
		json_t *listed = model_job_json(&orig.job);
		assert_non_null(listed);
		/* what job list prints applies as it is, an hour later, and
		 * moves nothing */
		char *text = json_dumps(listed, JSON_COMPACT);
		assert_non_null(text);
		define(&back, text, &orig.job, NOW + 3600000);
		json_t *again = model_job_json(&back.job);
		assert_non_null(again);
		if (!json_equal(listed, again)) {
			char *t2 = json_dumps(again, JSON_COMPACT);
			fail_msg("%s\n!=\n%s", text, t2);
		}
		assert_int_equal(back.job.id, orig.job.id);
		assert_int_equal(back.job.anchor_ms, orig.job.anchor_ms);
		assert_int_equal(back.job.at_ms, orig.job.at_ms);
		assert_int_equal(back.job.next_fire_at, orig.job.next_fire_at);
		free(text);
		json_decref(listed);
		json_decref(again);
		model_jobdef_clear(&back);
		model_jobdef_clear(&orig);
	}
}

/* The export form: definition keys only, an AT job's instant, and read
 * back (an hour later, on a fresh database and on its own) the same
 * document. */
static void test_job_def_json(void **state)
{
	(void)state;
	model_jobdef d, fresh, same;
	define(&d, "{\"name\": \"c\", \"at\": \"now+5m\", \"handler\": \"noop\"}", NULL, NOW);
	d.job.id = 7;
	json_t *o = model_job_def_json(&d.job);
	assert_non_null(o);
	assert_string_equal(json_string_value(json_object_get(o, "at")), "2026-01-02T03:09:05Z");
	assert_null(json_object_get(o, "id"));
	assert_null(json_object_get(o, "next_fire"));
	assert_null(json_object_get(o, "next_fire_at_ms"));
	char *text = json_dumps(o, JSON_COMPACT);
	assert_non_null(text);
	define(&fresh, text, NULL, NOW + 3600000);
	assert_int_equal(fresh.job.next_fire_at, NOW + 300000);
	define(&same, text, &d.job, NOW + 3600000);
	assert_string_equal(same.job.spec, "now+5m");
	json_t *a = model_job_def_json(&fresh.job), *b = model_job_def_json(&same.job);
	assert_true(json_equal(o, a) && json_equal(o, b));
	json_decref(a);
	json_decref(b);
	json_decref(o);
	free(text);
	model_jobdef_clear(&same);
	model_jobdef_clear(&fresh);
	model_jobdef_clear(&d);
}

static void test_job_json_fields(void **state)
{
	(void)state;
	model_jobdef d;
	define(&d, "{\"name\": \"e\", \"every\": \"30s\", \"command\": [\"true\"]}", NULL, NOW);
	d.job.id = 7;
	json_t *o = model_job_json(&d.job);
	assert_non_null(o);
	/* defaults are spelled out, with the table's key names */
	assert_string_equal(json_string_value(json_object_get(o, "every")), "30s");
	assert_string_equal(json_string_value(json_object_get(o, "tz")), "UTC");
	assert_string_equal(json_string_value(json_object_get(o, "misfire")), "fire_once");
	assert_int_equal(json_integer_value(json_object_get(o, "max-catchup")), 100);
	assert_string_equal(json_string_value(json_object_get(o, "misfire-threshold")), "5s");
	assert_string_equal(json_string_value(json_object_get(o, "node-loss")), "retry");
	assert_int_equal(json_integer_value(json_object_get(o, "retries")), 3);
	assert_string_equal(json_string_value(json_object_get(o, "retry-base")), "1m");
	assert_string_equal(json_string_value(json_object_get(o, "retry-cap")), "1h");
	assert_string_equal(json_string_value(json_object_get(o, "timeout")), "0s");
	assert_true(json_is_false(json_object_get(o, "retry-jitter")));
	/* the rarely used keys are left out at their defaults */
	assert_null(json_object_get(o, "jitter"));
	assert_null(json_object_get(o, "spread"));
	assert_null(json_object_get(o, "spread-seed"));
	assert_null(json_object_get(o, "start-jitter"));
	assert_null(json_object_get(o, "handler"));
	/* a command's process keys: the defaults that mean something are
	 * spelled out, the unset ones are absent */
	assert_int_equal(json_array_size(json_object_get(o, "env")), 0);
	assert_true(json_is_array(json_object_get(o, "env")));
	assert_true(json_is_false(json_object_get(o, "inherit-env")));
	assert_null(json_object_get(o, "user"));
	assert_null(json_object_get(o, "group"));
	assert_null(json_object_get(o, "cwd"));
	assert_null(json_object_get(o, "env-file"));
	assert_null(json_object_get(o, "umask"));
	assert_int_equal(json_integer_value(json_object_get(o, "id")), 7);
	assert_int_equal(json_integer_value(json_object_get(o, "next_fire_at_ms")), NOW + 30000);
	assert_string_equal(json_string_value(json_object_get(o, "next_fire")),
			    "2026-01-02T03:04:35Z");
	json_decref(o);
	/* no next fire: nulls */
	d.job.next_fire_at = -1;
	o = model_job_json(&d.job);
	assert_true(json_is_null(json_object_get(o, "next_fire_at_ms")));
	assert_true(json_is_null(json_object_get(o, "next_fire")));
	json_decref(o);

	/* job show's object: the job plus its runs */
	dbcron_run runs[2];
	memset(runs, 0, sizeof(runs));
	runs[0].id = 1;
	runs[1].id = 2;
	runs[0].state = runs[1].state = DBCRON_RUN_SUCCEEDED;
	o = model_job_json_with_runs(&d.job, runs, 2);
	assert_non_null(o);
	json_t *lr = json_object_get(o, "last_runs");
	assert_int_equal(json_array_size(lr), 2);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(lr, 1), "id")), 2);
	json_decref(o);
	model_jobdef_clear(&d);

	define(&d, "{\"name\": \"f\", \"every\": \"30s\", \"command\": [\"true\"], \"umask\": \"7\","
		   " \"user\": \"nobody\", \"env\": [\"K=v\"]}", NULL, NOW);
	o = model_job_json(&d.job);
	assert_string_equal(json_string_value(json_object_get(o, "umask")), "007");
	assert_string_equal(json_string_value(json_object_get(o, "user")), "nobody");
	assert_string_equal(json_string_value(json_array_get(json_object_get(o, "env"), 0)), "K=v");
	json_decref(o);
	model_jobdef_clear(&d);
}

static void test_run_json(void **state)
{
	(void)state;
	dbcron_run r;
	memset(&r, 0, sizeof(r));
	r.id = 12;
	r.job_id = 3;
	r.job_name = "nightly";
	r.fire_at = NOW;
	r.attempt = 2;
	r.state = DBCRON_RUN_FAILED;
	r.due_at = NOW + 60000;
	r.node = "host-1";
	r.started_ms = NOW + 60010;
	r.finished_ms = NOW + 61000;
	r.has_exit_code = true;
	r.exit_code = 3;
	r.missed = 4;
	r.error = "exit status 3";
	json_t *o = model_run_json(&r);
	assert_non_null(o);
	char *text = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	assert_string_equal(text,
			    "{\"attempt\":2,\"due_at_ms\":1767323105000,\"error\":\"exit status 3\","
			    "\"exit_code\":3,\"finished_ms\":1767323106000,"
			    "\"fire_at\":\"2026-01-02T03:04:05Z\",\"fire_at_ms\":1767323045000,"
			    "\"id\":12,\"job\":\"nightly\",\"missed\":4,\"node\":\"host-1\","
			    "\"started_ms\":1767323105010,\"state\":\"failed\"}");
	free(text);
	json_decref(o);

	/* unset: null (times -1, no exit code, no node, no error); output
	 * only when the run carries it */
	memset(&r, 0, sizeof(r));
	r.id = 13;
	r.fire_at = NOW;
	r.attempt = 1;
	r.state = DBCRON_RUN_SCHEDULED;
	r.due_at = NOW;
	r.started_ms = r.finished_ms = -1;
	r.output = "hi\n";
	o = model_run_json(&r);
	assert_non_null(o);
	assert_true(json_is_null(json_object_get(o, "job")));
	assert_true(json_is_null(json_object_get(o, "node")));
	assert_true(json_is_null(json_object_get(o, "started_ms")));
	assert_true(json_is_null(json_object_get(o, "finished_ms")));
	assert_true(json_is_null(json_object_get(o, "exit_code")));
	assert_true(json_is_null(json_object_get(o, "error")));
	assert_string_equal(json_string_value(json_object_get(o, "state")), "scheduled");
	assert_string_equal(json_string_value(json_object_get(o, "output")), "hi\n");
	json_decref(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_job_round_trip),
		cmocka_unit_test(test_job_def_json),
		cmocka_unit_test(test_job_json_fields),
		cmocka_unit_test(test_run_json),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
