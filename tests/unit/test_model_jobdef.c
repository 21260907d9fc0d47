/* The job-definition layer: one key table for flags and JSON keys, the
 * value and whole-definition checks with their messages, validation, and
 * how a definition is placed in its series (model/jobdef.c, model/job.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "model/jobdef.h"
#include "model/json.h"

/* 2026-01-02T03:04:05Z */
#define NOW 1767323045000LL

static void test_table(void **state)
{
	(void)state;
	int n = 0;
	for (const model_jobdef_key *k = model_jobdef_keys; k->name; k++, n++) {
		/* in id order, so key_of is an index */
		assert_int_equal(k->id, n);
		assert_ptr_equal(model_jobdef_key_of(k->id), k);
		assert_ptr_equal(model_jobdef_find(k->name), k);
		if (k->snake)
			assert_ptr_equal(model_jobdef_find(k->snake), k);
	}
	assert_int_equal(n, MODEL_JK__COUNT);
	assert_null(model_jobdef_find("colour"));
	assert_null(model_jobdef_key_of(MODEL_JK__COUNT));
}

/* One value per key, as a flag's text and as a JSON value. */
static const struct {
	const char *key, *text, *json;
} values[] = {
	{"name", "nightly", "\"nightly\""},
	{"every", "1h30m", "\"1h30m\""},
	{"tz", "Europe/Berlin", "\"Europe/Berlin\""},
	{"misfire", "catch_up", "\"catch_up\""},
	{"max-catchup", "7", "7"},
	{"misfire_threshold", "10s", "\"10s\""},
	{"overlap", "queue", "\"queue\""},
	{"node-loss", "abandon", "\"abandon\""},
	{"retries", "5", "5"},
	{"retry-base", "2s", "\"2s\""},
	{"retry_cap", "1m", "\"1m\""},
	{"jitter", NULL, "true"},
	{"timeout", "0s", "\"0s\""},
	{"paused", NULL, "true"},
	{"handler", "sleep", "\"sleep\""},
	{"arg", "250", "\"250\""},
};

static void test_flag_and_key_same_field(void **state)
{
	(void)state;
	model_jobdef f, j;
	dbcron_err err = {0};
	char doc[2048] = "{";
	size_t used = 1;

	model_jobdef_init(&f, true);
	model_jobdef_init(&j, false);
	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		const model_jobdef_key *k = model_jobdef_find(values[i].key);
		assert_non_null(k);
		int rc = values[i].text ? model_jobdef_set_text(&f, k, values[i].text, &err)
					: model_jobdef_set_bool(&f, k, true, &err);
		assert_int_equal(rc, DBCRON_OK);
		used += (size_t)snprintf(doc + used, sizeof(doc) - used, "%s\"%s\": %s",
					 i ? ", " : "", values[i].key, values[i].json);
	}
	snprintf(doc + used, sizeof(doc) - used, "}");
	json_t *obj = json_loads(doc, 0, NULL);
	assert_non_null(obj);
	const char *name = NULL;
	assert_int_equal(model_jobdef_from_json(&j, obj, &name, &err), DBCRON_OK);
	assert_string_equal(name, "nightly");
	assert_int_equal(model_jobdef_check(&f, &err), DBCRON_OK);

	/* the same keys were seen and every field came out the same */
	assert_memory_equal(f.seen, j.seen, sizeof(f.seen));
	const dbcron_job *a = &f.job, *b = &j.job;
	assert_int_equal(a->kind, DBCRON_SCHED_EVERY);
	assert_int_equal(a->kind, b->kind);
	assert_string_equal(a->spec, b->spec);
	assert_int_equal(a->interval_ms, 5400000);
	assert_int_equal(a->interval_ms, b->interval_ms);
	assert_string_equal(a->tz, b->tz);
	assert_int_equal(a->misfire, DBCRON_MISFIRE_CATCH_UP);
	assert_int_equal(a->misfire, b->misfire);
	assert_int_equal(a->max_catchup, 7);
	assert_int_equal(a->max_catchup, b->max_catchup);
	assert_int_equal(a->misfire_threshold_ms, 10000);
	assert_int_equal(a->misfire_threshold_ms, b->misfire_threshold_ms);
	assert_int_equal(a->overlap, DBCRON_OVERLAP_QUEUE);
	assert_int_equal(a->overlap, b->overlap);
	assert_int_equal(a->node_loss, DBCRON_NODE_LOSS_ABANDON);
	assert_int_equal(a->node_loss, b->node_loss);
	assert_int_equal(a->max_retries, 5);
	assert_int_equal(a->max_retries, b->max_retries);
	assert_int_equal(a->retry_base_ms, 2000);
	assert_int_equal(a->retry_base_ms, b->retry_base_ms);
	assert_int_equal(a->retry_cap_ms, 60000);
	assert_int_equal(a->retry_cap_ms, b->retry_cap_ms);
	assert_true(a->retry_jitter && b->retry_jitter);
	assert_int_equal(a->timeout_ms, 0);
	assert_int_equal(b->timeout_ms, 0);
	assert_true(a->paused && b->paused);
	assert_int_equal(a->executor, DBCRON_EXEC_HANDLER);
	assert_int_equal(a->executor, b->executor);
	assert_string_equal(a->handler, b->handler);
	assert_string_equal(a->arg, b->arg);
	json_decref(obj);
	model_jobdef_clear(&f);
	model_jobdef_clear(&j);
}

/* Text of the error one key's value gives, flags or JSON. */
static const char *set_error(bool cli, const char *key, const char *value,
			     dbcron_err *err)
{
	model_jobdef d;
	model_jobdef_init(&d, cli);
	memset(err, 0, sizeof(*err));
	int rc = model_jobdef_set_text(&d, model_jobdef_find(key), value, err);
	model_jobdef_clear(&d);
	assert_int_not_equal(rc, DBCRON_OK);
	return err->msg;
}

static void test_value_errors(void **state)
{
	(void)state;
	dbcron_err err;
	/* the wording the integration tests and users grep */
	assert_string_equal(set_error(true, "retries", "abc", &err),
			    "--retries 'abc': expected an integer");
	assert_string_equal(set_error(false, "retries", "abc", &err),
			    "key 'retries': 'abc': expected an integer");
	assert_string_equal(set_error(true, "retries", "1001", &err),
			    "--retries: 1001 is out of range 0-1000");
	assert_string_equal(set_error(true, "overlap", "never", &err),
			    "--overlap 'never': expected skip, allow, queue or replace");
	/* any handler name: the process that runs the job may register it */
	assert_string_equal(set_error(false, "handler", "", &err), "key 'handler': empty handler name");
	const char *tzmsg = set_error(true, "tz", "Mars/Olympus", &err);
	if (strncmp(tzmsg, "--tz: unknown time zone 'Mars/Olympus' (not in ", 47) != 0 ||
	    !strstr(tzmsg, "an IANA name such as Europe/Paris"))
		fail_msg("--tz message: %s", tzmsg);
	assert_int_equal(err.code, DBCRON_ETZ);
	assert_non_null(strstr(set_error(false, "every", "5x", &err), "key 'every': duration '5x'"));
	assert_non_null(strstr(set_error(true, "cron", "61 * * * *", &err), "--cron '61 * * * *'"));
	assert_int_equal(err.code, DBCRON_EPARSE);

	/* a key given twice, also under its snake_case name */
	model_jobdef d;
	model_jobdef_init(&d, false);
	assert_int_equal(model_jobdef_set_int(&d, model_jobdef_find("max-catchup"), 2, &err), 0);
	assert_int_equal(model_jobdef_set_int(&d, model_jobdef_find("max_catchup"), 3, &err),
			 DBCRON_EINVAL);
	assert_string_equal(err.msg, "key 'max-catchup': given twice");
	model_jobdef_clear(&d);
}

/* The process keys: the same field from flags and from JSON, repeatable
 * --env, and their errors. */
static void test_process_keys(void **state)
{
	(void)state;
	model_jobdef f, j;
	dbcron_err err = {0};
	static const struct {
		const char *key, *text;
	} flags[] = {
		{"name", "p"}, {"every", "1m"}, {"user", "nobody"}, {"group", "nogroup"},
		{"cwd", "/srv/p"}, {"env", "A=1"}, {"env", "B=2=3"}, {"env-file", "/etc/p.env"},
		{"umask", "0027"},
	};
	char *argv[] = {"true"};

	model_jobdef_init(&f, true);
	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
		assert_int_equal(model_jobdef_set_text(&f, model_jobdef_find(flags[i].key),
						       flags[i].text, &err), DBCRON_OK);
	assert_int_equal(model_jobdef_set_bool(&f, model_jobdef_find("inherit-env"), true, &err), 0);
	assert_int_equal(model_jobdef_set_argv(&f, argv, 1, &err), DBCRON_OK);
	assert_int_equal(model_jobdef_check(&f, &err), DBCRON_OK);

	json_t *obj = json_loads("{\"name\": \"p\", \"every\": \"1m\", \"user\": \"nobody\","
				 " \"group\": \"nogroup\", \"cwd\": \"/srv/p\", \"env\": [\"A=1\", \"B=2=3\"],"
				 " \"env_file\": \"/etc/p.env\", \"umask\": \"0027\","
				 " \"inherit_env\": true, \"command\": [\"true\"]}", 0, NULL);
	const char *name;
	model_jobdef_init(&j, false);
	assert_int_equal(model_jobdef_from_json(&j, obj, &name, &err), DBCRON_OK);
	json_decref(obj);
	assert_memory_equal(f.seen, j.seen, sizeof(f.seen));
	const dbcron_job *a = &f.job, *b = &j.job;
	assert_string_equal(a->user, "nobody");
	assert_string_equal(b->user, a->user);
	assert_string_equal(b->group, a->group);
	assert_string_equal(b->cwd, "/srv/p");
	assert_string_equal(a->cwd, b->cwd);
	assert_int_equal(a->envc, 2);
	assert_int_equal(b->envc, 2);
	assert_string_equal(a->env[1], "B=2=3");
	assert_string_equal(b->env[1], a->env[1]);
	assert_null(a->env[2]);
	assert_string_equal(a->env_file, b->env_file);
	assert_int_equal(a->umask, 027);
	assert_int_equal(b->umask, 027);
	assert_true(a->inherit_env && b->inherit_env);
	/* what every job write passes */
	assert_int_equal(dbcron_job_validate(&f.job, &err), DBCRON_OK);
	model_jobdef_clear(&f);
	model_jobdef_clear(&j);

	/* values alone */
	assert_string_equal(set_error(true, "user", "a b", &err),
			    "--user 'a b': expected a user name (letters, digits, '.', '_' and '-')");
	assert_string_equal(set_error(true, "cwd", "srv", &err),
			    "--cwd 'srv': expected an absolute path for the working directory");
	assert_string_equal(set_error(false, "env-file", "x.env", &err),
			    "key 'env-file': 'x.env': expected an absolute path for the env-file");
	assert_string_equal(set_error(true, "env", "PASSWORD", &err), "--env: expected KEY=VALUE");
	assert_string_equal(set_error(true, "env", "DBCRON_NODE=x", &err),
			    "--env 'DBCRON_NODE': names starting with DBCRON_ are set by the node");
	assert_string_equal(set_error(true, "umask", "0800", &err),
			    "--umask '0800': expected an octal umask such as 027");
	assert_string_equal(set_error(true, "umask", "-1", &err),
			    "--umask '-1': expected an octal umask such as 027");

	/* --env again: a second name is added, the same name refused */
	model_jobdef d;
	model_jobdef_init(&d, true);
	const model_jobdef_key *env = model_jobdef_find("env");
	assert_int_equal(model_jobdef_set_text(&d, env, "A=1", &err), DBCRON_OK);
	assert_int_equal(model_jobdef_set_text(&d, env, "A=2", &err), DBCRON_EINVAL);
	assert_string_equal(err.msg, "--env 'A' is given twice");
	model_jobdef_clear(&d);

	/* only for a command */
	model_jobdef_init(&d, true);
	assert_int_equal(model_jobdef_set_text(&d, model_jobdef_find("name"), "h", &err), 0);
	assert_int_equal(model_jobdef_set_text(&d, model_jobdef_find("every"), "1m", &err), 0);
	assert_int_equal(model_jobdef_set_text(&d, model_jobdef_find("handler"), "noop", &err), 0);
	assert_int_equal(model_jobdef_set_text(&d, model_jobdef_find("cwd"), "/tmp", &err), 0);
	assert_int_equal(model_jobdef_check(&d, &err), DBCRON_EINVAL);
	assert_string_equal(err.msg, "--cwd is only for a command (a handler runs inside the node)");
	model_jobdef_clear(&d);

	/* the host check: a user this host does not have */
	model_jobdef_init(&d, true);
	assert_int_equal(model_jobdef_set_text(&d, model_jobdef_find("user"),
					       "no-such-user-dbcron", &err), 0);
	assert_int_equal(model_jobdef_check_host(&d, &err), DBCRON_ENOTFOUND);
	assert_string_equal(err.msg, "--user 'no-such-user-dbcron': no such user on this host");
	model_jobdef_clear(&d);
	model_jobdef_init(&d, false);
	assert_int_equal(model_jobdef_set_text(&d, model_jobdef_find("group"),
					       "no-such-group-dbcron", &err), 0);
	assert_int_equal(model_jobdef_check_host(&d, &err), DBCRON_ENOTFOUND);
	assert_string_equal(err.msg, "key 'group': 'no-such-group-dbcron': no such group on this host");
	model_jobdef_clear(&d);
}

static void test_json_key_errors(void **state)
{
	(void)state;
	static const struct {
		const char *doc, *msg;
	} cases[] = {
		{"42", "expected an object {\"name\": ..., ...}"},
		{"{\"every\": \"1s\"}", "missing key 'name'"},
		{"{\"name\": 7}", "key 'name': expected a string"},
		{"{\"name\": \"x\", \"every\": \"1s\", \"handler\": \"noop\", \"colour\": \"red\"}",
		 "unknown key 'colour'"},
		{"{\"name\": \"x\", \"every\": 5}", "key 'every': expected a duration string such as \"30s\""},
		{"{\"name\": \"x\", \"jitter\": \"yes\"}", "key 'jitter': expected true or false"},
		{"{\"name\": \"x\", \"retries\": \"3\"}", "key 'retries': expected an integer"},
		{"{\"name\": \"x\", \"command\": \"echo hi\"}",
		 "key 'command': expected a non-empty array of strings"},
		{"{\"name\": \"x\", \"command\": []}", "key 'command': expected a non-empty array of strings"},
		{"{\"name\": \"x\", \"every\": \"1s\"}",
		 "no command: give \"command\": [\"prog\", \"arg\"...], \"handler\", \"http\" or \"sql\""},
		{"{\"name\": \"x\", \"handler\": \"noop\"}",
		 "no schedule: give one of the keys cron, every, after, at, needs"},
		{"{\"name\": \"x\", \"every\": \"1s\", \"at\": \"now\", \"handler\": \"noop\"}",
		 "two schedules (key 'every' and key 'at'): give exactly one of cron, every, after, at, "
		 "needs (a job with needs has no schedule of its own)"},
		{"{\"name\": \"x\", \"every\": \"1s\", \"arg\": \"a\", \"command\": [\"true\"]}",
		 "'arg' is only for 'handler' (a command takes its arguments in 'command')"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		model_jobdef d;
		dbcron_err err = {0};
		const char *name;
		json_t *obj = json_loads(cases[i].doc, JSON_DECODE_ANY, NULL);
		assert_non_null(obj);
		model_jobdef_init(&d, false);
		assert_int_not_equal(model_jobdef_from_json(&d, obj, &name, &err), DBCRON_OK);
		assert_string_equal(err.msg, cases[i].msg);
		model_jobdef_clear(&d);
		json_decref(obj);
	}
}

static void test_whole_definition_cli(void **state)
{
	(void)state;
	model_jobdef d;
	dbcron_err err = {0};
	char *cmd[] = {"echo", "hi"};

	model_jobdef_init(&d, true);
	assert_int_equal(model_jobdef_set_text(&d, model_jobdef_find("name"), "x", &err), 0);
	assert_int_equal(model_jobdef_check(&d, &err), DBCRON_EINVAL);
	assert_string_equal(err.msg,
			    "no schedule: give one of --cron EXPR, --every DUR, --after DUR, --at TIME, --needs JOBS");
	assert_int_equal(model_jobdef_set_text(&d, model_jobdef_find("after"), "5m", &err), 0);
	assert_int_equal(model_jobdef_check(&d, &err), DBCRON_EINVAL);
	assert_string_equal(err.msg, "no command: give -- COMMAND [ARGS...], --handler NAME, "
				     "--http METHOD URL or --sql STATEMENT");
	assert_int_equal(model_jobdef_set_text(&d, model_jobdef_find("handler"), "noop", &err), 0);
	assert_int_equal(model_jobdef_set_argv(&d, cmd, 2, &err), 0);
	assert_int_equal(model_jobdef_check(&d, &err), DBCRON_EINVAL);
	assert_string_equal(err.msg, "both --handler and a command after --: give one");
	assert_int_equal(model_jobdef_set_argv(&d, cmd, 2, &err), DBCRON_EINVAL);
	assert_string_equal(err.msg, "-- COMMAND: given twice");
	model_jobdef_clear(&d);
}

static void valid_job(dbcron_job *j)
{
	static char *argv[] = {"true", NULL};
	dbcron_job_init(j);
	j->name = "ok";
	j->kind = DBCRON_SCHED_EVERY;
	j->spec = "30s";
	j->argv = argv;
	j->argc = 1;
}

static void test_validate(void **state)
{
	(void)state;
	dbcron_job j;
	dbcron_err err = {0};

	/* the job's strings are the test's: never dbcron_job_clear here */
	valid_job(&j);
	assert_int_equal(dbcron_job_validate(&j, &err), DBCRON_OK);
	assert_int_equal(j.interval_ms, 30000);

#define EXPECT_INVALID(setup, text)                                             \
	do {                                                                    \
		valid_job(&j);                                                  \
		setup;                                                          \
		memset(&err, 0, sizeof(err));                                   \
		assert_int_not_equal(dbcron_job_validate(&j, &err), DBCRON_OK); \
		assert_non_null(strstr(err.msg, text));                         \
	} while (0)

	EXPECT_INVALID(j.name = "a b", "job name 'a b': must be 1-200 printable characters without spaces");
	EXPECT_INVALID(j.name = NULL, "job name '': must be 1-200");
	EXPECT_INVALID(j.spec = "", "job 'ok': no schedule (give one of --cron, --every, --after, --at)");
	EXPECT_INVALID((j.kind = DBCRON_SCHED_AT, j.at_ms = -1), "job 'ok': --at time not resolved");
	EXPECT_INVALID((j.kind = DBCRON_SCHED_CRON, j.spec = "0 0 25 * * ?"), "");
	EXPECT_INVALID(j.max_retries = 1001, "job 'ok': retries 1001 out of range 0-1000");
	EXPECT_INVALID(j.max_catchup = 0, "job 'ok': max-catchup 0 out of range 1-100000");
	EXPECT_INVALID(j.retry_cap_ms = 1, "job 'ok': retry base must be > 0 and cap >= base");
	EXPECT_INVALID(j.timeout_ms = -1, "job 'ok': negative timeout");
	EXPECT_INVALID(j.overlap = 9, "job 'ok': unknown policy value");
	EXPECT_INVALID(j.argc = 0, "job 'ok': no command (give -- COMMAND [ARGS...] or --handler NAME)");
	EXPECT_INVALID((j.executor = DBCRON_EXEC_HANDLER, j.handler = ""),
		       "job 'ok': a handler job needs a handler name");
	EXPECT_INVALID(j.tz = "Mars/Olympus", "Mars/Olympus");
#undef EXPECT_INVALID
}

/* A definition from flags: name, one schedule key, handler noop. */
static void define(model_jobdef *d, const char *key, const char *spec)
{
	dbcron_err err = {0};
	model_jobdef_init(d, true);
	assert_int_equal(model_jobdef_set_text(d, model_jobdef_find("name"), "j", &err), 0);
	assert_int_equal(model_jobdef_set_text(d, model_jobdef_find(key), spec, &err), 0);
	assert_int_equal(model_jobdef_set_text(d, model_jobdef_find("handler"), "noop", &err), 0);
}

static void test_finish_series(void **state)
{
	(void)state;
	model_jobdef d, again;
	dbcron_err err = {0};

	/* "now+5m" is resolved once, against the clock given */
	define(&d, "at", "now+5m");
	assert_int_equal(model_jobdef_finish(&d, NOW, NULL, &err), DBCRON_OK);
	assert_int_equal(d.job.at_ms, NOW + 300000);
	assert_int_equal(d.job.next_fire_at, NOW + 300000);
	/* re-applied later: the same text keeps the instant and the next fire */
	d.job.id = 42;
	d.job.next_fire_at = -1; /* it has fired */
	define(&again, "at", "now+5m");
	assert_int_equal(model_jobdef_finish(&again, NOW + 3600000, &d.job, &err), DBCRON_OK);
	assert_int_equal(again.job.at_ms, NOW + 300000);
	assert_int_equal(again.job.next_fire_at, -1);
	assert_int_equal(again.job.id, 42);
	model_jobdef_clear(&again);
	model_jobdef_clear(&d);

	/* EVERY anchors at now; the same schedule keeps the anchor */
	define(&d, "every", "10s");
	assert_int_equal(model_jobdef_finish(&d, NOW, NULL, &err), DBCRON_OK);
	assert_int_equal(d.job.anchor_ms, NOW);
	assert_int_equal(d.job.next_fire_at, NOW + 10000);
	d.job.paused = true;
	define(&again, "every", "10s");
	assert_int_equal(model_jobdef_finish(&again, NOW + 25000, &d.job, &err), DBCRON_OK);
	assert_int_equal(again.job.anchor_ms, NOW);
	assert_int_equal(again.job.next_fire_at, NOW + 10000);
	assert_true(again.job.paused); /* "paused" not given: kept */
	model_jobdef_clear(&again);
	/* a changed interval is a new series from now */
	define(&again, "every", "20s");
	assert_int_equal(model_jobdef_finish(&again, NOW + 25000, &d.job, &err), DBCRON_OK);
	assert_int_equal(again.job.anchor_ms, NOW + 25000);
	assert_int_equal(again.job.next_fire_at, NOW + 45000);
	model_jobdef_clear(&again);
	/* unpaused by the definition: the series goes on from now */
	define(&again, "every", "10s");
	assert_int_equal(model_jobdef_set_bool(&again, model_jobdef_find("paused"), false, &err), 0);
	assert_int_equal(model_jobdef_finish(&again, NOW + 25000, &d.job, &err), DBCRON_OK);
	assert_int_equal(again.job.anchor_ms, NOW);
	assert_int_equal(again.job.next_fire_at, NOW + 30000);
	model_jobdef_clear(&again);
	model_jobdef_clear(&d);

	/* the validation message reaches the caller */
	define(&d, "every", "10s");
	d.job.max_retries = 5000;
	assert_int_equal(model_jobdef_finish(&d, NOW, NULL, &err), DBCRON_EINVAL);
	assert_string_equal(err.msg, "job 'j': retries 5000 out of range 0-1000");
	model_jobdef_clear(&d);
}

static void test_texts(void **state)
{
	(void)state;
	char b[128];
	assert_string_equal(model_time_text(-1, b, sizeof(b)), "-");
	assert_string_equal(model_time_text(NOW, b, sizeof(b)), "2026-01-02T03:04:05Z");
	assert_string_equal(model_time_text(NOW + 250, b, sizeof(b)), "2026-01-02T03:04:05.250Z");
	model_jobdef d;
	define(&d, "at", "now+5m");
	assert_string_equal(model_schedule_text(&d.job, b, sizeof(b)), "at now+5m");
	dbcron_err err = {0};
	assert_int_equal(model_jobdef_finish(&d, NOW, NULL, &err), 0);
	assert_string_equal(model_schedule_text(&d.job, b, sizeof(b)), "at 2026-01-02T03:09:05Z");
	model_jobdef_clear(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_flag_and_key_same_field),
		cmocka_unit_test(test_value_errors),
		cmocka_unit_test(test_process_keys),
		cmocka_unit_test(test_json_key_errors),
		cmocka_unit_test(test_whole_definition_cli),
		cmocka_unit_test(test_validate),
		cmocka_unit_test(test_finish_series),
		cmocka_unit_test(test_texts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
