/*
 * The executor table: the built-ins found by kind and by name, their
 * validate hooks, exec_run() dispatching through the table (an unknown
 * kind is FAILED with a clear error), a new executor plugging in with
 * exec_register() and the refusals, and lookups racing with a
 * registration (for ThreadSanitizer).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "exec/exec.h"

static void test_lookup_builtins(void **state)
{
	(void)state;
	const exec_ops *sh = exec_lookup(DBCRON_EXEC_SHELL);
	const exec_ops *h = exec_lookup(DBCRON_EXEC_HANDLER);

	assert_ptr_equal(sh, &exec_shell_ops);
	assert_ptr_equal(h, &exec_handler_ops);
	assert_ptr_equal(exec_lookup_name("shell"), sh);
	assert_ptr_equal(exec_lookup_name("handler"), h);
	assert_string_equal(sh->name, "shell");
	assert_string_equal(h->name, "handler");
	assert_int_equal(sh->version, EXEC_OPS_VERSION);
	assert_int_equal(h->version, EXEC_OPS_VERSION);
	assert_int_equal(sh->caps, EXEC_CAP_OUTPUT | EXEC_CAP_CANCEL | EXEC_CAP_TIMEOUT |
					   EXEC_CAP_PREEMPT | EXEC_CAP_PROCESS);
	/* A handler runs inside the node: no process of its own. */
	assert_int_equal(h->caps & EXEC_CAP_PROCESS, 0);
	/* A handler is only stopped when it looks. */
	assert_int_equal(h->caps & EXEC_CAP_PREEMPT, 0);
	assert_true(h->caps & EXEC_CAP_TIMEOUT);

	assert_null(exec_lookup((dbcron_executor)0));
	assert_null(exec_lookup((dbcron_executor)99));
	assert_null(exec_lookup_name("Shell"));
	assert_null(exec_lookup_name(""));
	assert_null(exec_lookup_name(NULL));
}

static void test_validate_shell(void **state)
{
	(void)state;
	dbcron_job job;
	dbcron_err err = {0};
	char *argv[] = {"echo", "hi", NULL};
	char *empty[] = {"", NULL};

	dbcron_job_init(&job);
	job.name = "v";
	job.executor = DBCRON_EXEC_SHELL;
	job.argv = argv;
	job.argc = 2;
	assert_int_equal(exec_validate(&job, &err), DBCRON_OK);
	assert_int_equal(exec_shell_ops.validate(&job, &err), DBCRON_OK);

	job.argv = NULL;
	job.argc = 0;
	assert_int_equal(exec_validate(&job, &err), DBCRON_EINVAL);
	assert_string_equal(err.msg, "job 'v': no command (give -- COMMAND [ARGS...] or --handler NAME)");
	job.argv = empty;
	job.argc = 1;
	assert_int_equal(exec_validate(&job, &err), DBCRON_EINVAL);
	job.argv = argv;
	job.argc = 0;
	assert_int_equal(exec_validate(&job, &err), DBCRON_EINVAL);
	assert_int_equal(exec_validate(&job, NULL), DBCRON_EINVAL);
}

static void test_validate_handler(void **state)
{
	(void)state;
	dbcron_job job;
	dbcron_err err = {0};

	dbcron_job_init(&job);
	job.name = "h";
	job.executor = DBCRON_EXEC_HANDLER;
	job.handler = "noop";
	assert_int_equal(exec_validate(&job, &err), DBCRON_OK);
	job.handler = "sleep";
	assert_int_equal(exec_validate(&job, &err), DBCRON_OK);

	/* a name this process does not know is valid: the node that runs the
	 * job may register it (routing) */
	job.handler = "nosuch";
	assert_int_equal(exec_validate(&job, &err), DBCRON_OK);
	job.handler = "";
	assert_int_equal(exec_validate(&job, &err), DBCRON_EINVAL);
	job.handler = NULL;
	assert_int_equal(exec_validate(&job, &err), DBCRON_EINVAL);
	assert_string_equal(err.msg, "job 'h': a handler job needs a handler name");

	/* A handler job's argv is not the handler executor's business. */
	job.handler = "noop";
	job.argv = NULL;
	assert_int_equal(exec_validate(&job, &err), DBCRON_OK);

	/* What only a process can have is refused for a handler. */
	job.user = "nobody";
	assert_int_equal(exec_validate(&job, &err), DBCRON_EINVAL);
	assert_string_equal(err.msg, "job 'h': user, group, cwd, env, env-file, umask and "
				     "inherit-env are only for a command, not for the handler executor");
	job.user = NULL;
	job.umask = 022;
	assert_int_equal(exec_validate(&job, &err), DBCRON_EINVAL);
	job.umask = -1;
	job.inherit_env = true;
	assert_int_equal(exec_validate(&job, &err), DBCRON_EINVAL);
	job.inherit_env = false;

	job.executor = (dbcron_executor)99;
	assert_int_equal(exec_validate(&job, &err), DBCRON_EINVAL);
	assert_string_equal(err.msg, "job 'h': unknown executor 99");
}

static void test_run_dispatch(void **state)
{
	(void)state;
	dbcron_job job;
	exec_result r;
	char *argv[] = {"echo", "through the table", NULL};

	dbcron_job_init(&job);
	job.name = "d";
	job.argv = argv;
	job.argc = 2;
	exec_req req = {.job = &job};
	exec_run(&req, &r);
	assert_int_equal(r.state, DBCRON_RUN_SUCCEEDED);
	assert_string_equal(r.output, "through the table\n");
	exec_result_clear(&r);

	job.executor = DBCRON_EXEC_HANDLER;
	job.handler = "noop";
	exec_run(&req, &r);
	assert_int_equal(r.state, DBCRON_RUN_SUCCEEDED);
	assert_null(r.output);
	exec_result_clear(&r);

	job.executor = (dbcron_executor)99;
	exec_run(&req, &r);
	assert_int_equal(r.state, DBCRON_RUN_FAILED);
	assert_false(r.has_exit_code);
	assert_null(r.output);
	assert_string_equal(r.error, "job 'd': unknown executor 99");
	assert_true(r.mono_end_ms >= r.mono_start_ms);
	exec_result_clear(&r);
}

/* ---- a new executor plugs in ---- */

#define FAKE_KIND ((dbcron_executor)50)

static int fake_validate(const dbcron_job *job, dbcron_err *err)
{
	if (!job->arg)
		return dbcron_err_set(err, DBCRON_EINVAL, "job '%s': fake needs an arg", job->name);
	return DBCRON_OK;
}

static void fake_run(const exec_req *req, exec_result *res)
{
	memset(res, 0, sizeof(*res));
	res->state = DBCRON_RUN_SUCCEEDED;
	res->has_exit_code = true;
	res->output = dbcron__strdup(req->job->arg);
}

static const exec_ops fake_ops = {
	.version = EXEC_OPS_VERSION,
	.kind = FAKE_KIND,
	.name = "fake",
	.caps = EXEC_CAP_OUTPUT,
	.validate = fake_validate,
	.run = fake_run,
};

static void test_register(void **state)
{
	(void)state;
	dbcron_err err = {0};
	dbcron_job job;
	exec_result r;

	assert_null(exec_lookup(FAKE_KIND));
	assert_int_equal(exec_register(&fake_ops, &err), DBCRON_OK);
	assert_ptr_equal(exec_lookup(FAKE_KIND), &fake_ops);
	assert_ptr_equal(exec_lookup_name("fake"), &fake_ops);
	/* The built-ins are still there. */
	assert_ptr_equal(exec_lookup(DBCRON_EXEC_SHELL), &exec_shell_ops);

	dbcron_job_init(&job);
	job.name = "f";
	job.executor = FAKE_KIND;
	assert_int_equal(exec_validate(&job, &err), DBCRON_EINVAL);
	assert_string_equal(err.msg, "job 'f': fake needs an arg");
	job.arg = "payload";
	assert_int_equal(exec_validate(&job, &err), DBCRON_OK);
	exec_req req = {.job = &job};
	exec_run(&req, &r);
	assert_int_equal(r.state, DBCRON_RUN_SUCCEEDED);
	assert_string_equal(r.output, "payload");
	exec_result_clear(&r);

	/* The job check every write path passes asks the registered
	 * executor: a fake job without its arg is refused with fake's own
	 * message, and accepted once it has one. */
	dbcron_job v;
	dbcron_job_init(&v);
	v.name = "f";
	v.kind = DBCRON_SCHED_EVERY;
	v.spec = "10s";
	v.executor = FAKE_KIND;
	assert_int_equal(dbcron_job_validate(&v, &err), DBCRON_EINVAL);
	assert_string_equal(err.msg, "job 'f': fake needs an arg");
	v.arg = "payload";
	assert_int_equal(dbcron_job_validate(&v, &err), DBCRON_OK);
	v.executor = (dbcron_executor)77;
	assert_int_equal(dbcron_job_validate(&v, &err), DBCRON_EINVAL);
	assert_string_equal(err.msg, "job 'f': unknown executor 77");

	/* Refusals: taken kind, taken name, wrong version, missing hooks. */
	exec_ops o = fake_ops;
	assert_int_equal(exec_register(&fake_ops, &err), DBCRON_EEXISTS);
	o.name = "other";
	assert_int_equal(exec_register(&o, &err), DBCRON_EEXISTS);
	o = exec_shell_ops;
	o.kind = (dbcron_executor)51;
	assert_int_equal(exec_register(&o, &err), DBCRON_EEXISTS);
	assert_non_null(strstr(err.msg, "already registered"));
	o = fake_ops;
	o.kind = (dbcron_executor)52;
	o.name = "v0";
	o.version = 0;
	assert_int_equal(exec_register(&o, &err), DBCRON_EINVAL);
	o.version = EXEC_OPS_VERSION;
	o.run = NULL;
	assert_int_equal(exec_register(&o, &err), DBCRON_EINVAL);
	o.run = fake_run;
	o.validate = NULL;
	assert_int_equal(exec_register(&o, &err), DBCRON_EINVAL);
	o.validate = fake_validate;
	o.name = "";
	assert_int_equal(exec_register(&o, &err), DBCRON_EINVAL);
	assert_int_equal(exec_register(NULL, &err), DBCRON_EINVAL);
	assert_null(exec_lookup((dbcron_executor)52));
}

/* ---- lookups on workers while executors are registered ---- */

#define N_EXTRA 8
static exec_ops extra[N_EXTRA];
static char extra_names[N_EXTRA][16];
static atomic_int stop_lookups;

static void *lookup_loop(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop_lookups)) {
		if (exec_lookup(DBCRON_EXEC_SHELL) != &exec_shell_ops)
			return (void *)1;
		for (int i = 0; i < N_EXTRA; i++) {
			const exec_ops *o = exec_lookup_name(extra_names[i]);
			/* Whole or absent, never half an entry. */
			if (o && (o->run != fake_run || o->kind != extra[i].kind))
				return (void *)1;
		}
	}
	return NULL;
}

static void test_register_races_lookups(void **state)
{
	(void)state;
	pthread_t th[2];
	dbcron_err err = {0};

	for (int i = 0; i < N_EXTRA; i++) {
		snprintf(extra_names[i], sizeof(extra_names[i]), "extra%d", i);
		extra[i] = fake_ops;
		extra[i].kind = (dbcron_executor)(100 + i);
		extra[i].name = extra_names[i];
	}
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&th[i], NULL, lookup_loop, NULL), 0);
	for (int i = 0; i < N_EXTRA; i++)
		assert_int_equal(exec_register(&extra[i], &err), DBCRON_OK);
	atomic_store(&stop_lookups, 1);
	for (int i = 0; i < 2; i++) {
		void *ret;
		pthread_join(th[i], &ret);
		assert_null(ret);
	}
	for (int i = 0; i < N_EXTRA; i++)
		assert_ptr_equal(exec_lookup(extra[i].kind), &extra[i]);
}

/* The table is fixed: once full, a clear refusal, and nothing lost. */
static void test_table_full(void **state)
{
	(void)state;
	static exec_ops more[32];
	static char names[32][16];
	dbcron_err err = {0};
	int added = 0, rc = DBCRON_OK;

	for (int i = 0; i < 32 && rc == DBCRON_OK; i++) {
		snprintf(names[i], sizeof(names[i]), "more%d", i);
		more[i] = fake_ops;
		more[i].kind = (dbcron_executor)(200 + i);
		more[i].name = names[i];
		rc = exec_register(&more[i], &err);
		added += rc == DBCRON_OK;
	}
	assert_int_equal(rc, DBCRON_EBUSY);
	assert_non_null(strstr(err.msg, "table full"));
	assert_true(added > 0);
	assert_ptr_equal(exec_lookup(DBCRON_EXEC_HANDLER), &exec_handler_ops);
	assert_ptr_equal(exec_lookup_name(names[added - 1]), &more[added - 1]);
	assert_null(exec_lookup_name(names[added]));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lookup_builtins),
		cmocka_unit_test(test_validate_shell),
		cmocka_unit_test(test_validate_handler),
		cmocka_unit_test(test_run_dispatch),
		cmocka_unit_test(test_register),
		cmocka_unit_test(test_register_races_lookups),
		cmocka_unit_test(test_table_full),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
