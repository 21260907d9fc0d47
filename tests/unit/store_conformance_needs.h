/*
 * Store conformance, issue 26 item 3: fan-in.  A NEEDS job fires once per
 * completed set of its needs' successes, also when the two last needs end
 * at the same moment through two store handles; unknown needs, cycles and
 * the delete or rename of a needed job are refused with nothing written.
 * Included after store_conformance.h by every backend's test; list
 * STORE_CONFORMANCE_NEEDS_TESTS.
 */
#ifndef DBCRON_TEST_STORE_CONFORMANCE_NEEDS_H
#define DBCRON_TEST_STORE_CONFORMANCE_NEEDS_H

#include <pthread.h>

/* A job that needs spec ("a,b"), a noop handler. */
static void conf_needs_job(dbcron_job *j, const char *name, const char *spec)
{
	conf_job(j, name, -1);
	j->kind = DBCRON_SCHED_NEEDS;
	dbcron__free(j->spec);
	j->spec = dbcron__strdup(spec);
	j->interval_ms = 0;
	assert_non_null(j->spec);
}

/* a and b (not due for an hour) and c needing both, in one put: the
 * edges resolve names written by the same put. */
static void conf_needs_setup(conf_ctx *c)
{
	int64_t now = conf_now(c);
	dbcron_job jobs[3];
	conf_needs_job(&jobs[0], "c", "a,b");
	conf_job(&jobs[1], "a", now + 3600000);
	conf_job(&jobs[2], "b", now + 3600000);
	CONF_OK(c, conf_upsert(c, jobs, 3));
	for (int i = 0; i < 3; i++)
		dbcron_job_clear(&jobs[i]);
}

static int conf_needs_count(conf_ctx *c, const char *job)
{
	conf_runs rs = {0};
	conf_list(c, job, 0, -1, 0, &rs);
	int n = rs.n;
	conf_runs_clear(&rs);
	return n;
}

/* Trigger each of names (NULL-terminated) and claim their runs into r;
 * out[i] is names[i]'s run. */
static void conf_needs_claim(conf_ctx *c, const char *const *names, store_claim_result *r,
			     const store_claimed **out)
{
	size_t n = 0;
	for (; names[n]; n++)
		CONF_OK(c, store_job_trigger(c->s, names[n], NULL, NULL, &c->err));
	conf_sleep_ms(5);
	conf_planner p = {.stop = -1};
	CONF_OK(c, conf_claim(c, c->s, "n1", "tok-needs", 10, &p, r));
	for (size_t i = 0; i < n; i++) {
		out[i] = NULL;
		for (size_t k = 0; k < r->nruns; k++)
			if (strcmp(r->runs[k].run.job_name, names[i]) == 0 && !out[i])
				out[i] = &r->runs[k];
		assert_non_null(out[i]);
	}
}

/* End one claimed run SUCCEEDED (RUNNING first) through s; a deadlock or
 * a busy file is retried, as a node's flush retries. */
static int conf_needs_succeed(store *s, const store_claimed *cl, dbcron_err *err)
{
	store_update u[2];
	u[0] = conf_update(cl, DBCRON_RUN_RUNNING);
	u[0].started_ms = cl->run.fire_at;
	u[1] = conf_update(cl, DBCRON_RUN_SUCCEEDED);
	u[1].finished_ms = cl->run.fire_at + 1;
	u[1].has_exit_code = true;
	int rc = DBCRON_EBUSY;
	for (int tries = 0; tries < 100 && rc == DBCRON_EBUSY; tries++)
		rc = store_apply(s, "n1", u, 2, err);
	if (!rc && !u[1].applied)
		rc = DBCRON_EFENCED;
	return rc;
}

static void conf_test_needs_fanin(void **state)
{
	conf_ctx *c = *state;
	conf_needs_setup(c);
	store_claim_result r;
	const store_claimed *cl[2];
	static const char *const a[] = {"a", NULL}, *const b[] = {"b", NULL};

	/* a twice, then b: one fire; b, then a: the second */
	for (int i = 0; i < 2; i++) {
		conf_needs_claim(c, a, &r, cl);
		CONF_OK(c, conf_needs_succeed(c->s, cl[0], &c->err));
		store_claim_result_clear(&r);
		assert_int_equal(conf_needs_count(c, "c"), 0);
	}
	conf_needs_claim(c, b, &r, cl);
	CONF_OK(c, conf_needs_succeed(c->s, cl[0], &c->err));
	store_claim_result_clear(&r);
	assert_int_equal(conf_needs_count(c, "c"), 1);
	conf_needs_claim(c, b, &r, cl);
	CONF_OK(c, conf_needs_succeed(c->s, cl[0], &c->err));
	store_claim_result_clear(&r);
	assert_int_equal(conf_needs_count(c, "c"), 1);

	/* a failure is no success */
	conf_needs_claim(c, a, &r, cl);
	store_update f = conf_update(cl[0], DBCRON_RUN_FAILED);
	f.finished_ms = cl[0]->run.fire_at + 1;
	CONF_OK(c, store_apply(c->s, "n1", &f, 1, &c->err));
	store_claim_result_clear(&r);
	assert_int_equal(conf_needs_count(c, "c"), 1);
	conf_needs_claim(c, a, &r, cl);
	CONF_OK(c, conf_needs_succeed(c->s, cl[0], &c->err));
	store_claim_result_clear(&r);
	assert_int_equal(conf_needs_count(c, "c"), 2);

	conf_runs rs = {0};
	conf_list(c, "c", 0, -1, 0, &rs);
	for (int i = 0; i < rs.n; i++)
		assert_int_equal(rs.rows[i].state, DBCRON_RUN_SCHEDULED);
	conf_runs_clear(&rs);
}

struct conf_needs_racer {
	const char *url;
	const store_claimed *cl;
	pthread_barrier_t *go;
	int rc;
	char msg[sizeof(((dbcron_err *)0)->msg)];
};

static void *conf_needs_racer_main(void *arg)
{
	struct conf_needs_racer *x = arg;
	store *s = NULL;
	dbcron_err err = {0};
	if ((x->rc = store_open(x->url, &s, &err)) == DBCRON_OK) {
		pthread_barrier_wait(x->go);
		x->rc = conf_needs_succeed(s, x->cl, &err);
		store_close(s);
	} else {
		pthread_barrier_wait(x->go);
	}
	snprintf(x->msg, sizeof(x->msg), "%s", err.msg);
	return NULL;
}

/* The last two needs end at once through two handles, round after round:
 * each round's set fires exactly once (the dependent's row lock; a miss
 * would leave a round without a run, a double give two). */
static void conf_test_needs_concurrent(void **state)
{
	conf_ctx *c = *state;
	conf_needs_setup(c);
	static const char *const ab[] = {"a", "b", NULL};
	enum { ROUNDS = 8 };
	for (int round = 0; round < ROUNDS; round++) {
		store_claim_result r;
		const store_claimed *cl[2];
		pthread_barrier_t go;
		pthread_t t[2];
		struct conf_needs_racer x[2];
		conf_needs_claim(c, ab, &r, cl);
		pthread_barrier_init(&go, NULL, 2);
		for (int i = 0; i < 2; i++) {
			x[i] = (struct conf_needs_racer){.url = c->url, .cl = cl[i], .go = &go};
			assert_int_equal(pthread_create(&t[i], NULL, conf_needs_racer_main, &x[i]), 0);
		}
		for (int i = 0; i < 2; i++) {
			pthread_join(t[i], NULL);
			if (x[i].rc)
				fail_msg("round %d racer %d: %d %s", round, i, x[i].rc, x[i].msg);
		}
		pthread_barrier_destroy(&go);
		store_claim_result_clear(&r);
		int n = conf_needs_count(c, "c");
		if (n != round + 1)
			fail_msg("after %d completed sets c has %d runs", round + 1, n);
	}
}

static void conf_test_needs_refusals(void **state)
{
	conf_ctx *c = *state;
	dbcron_job j[2], got;
	char detached[128];
	conf_needs_setup(c);

	/* an unknown needed job */
	conf_needs_job(&j[0], "d", "a,zz");
	assert_int_equal(conf_upsert(c, j, 1), DBCRON_EINVAL);
	assert_non_null(strstr(c->err.msg, "'zz'"));
	dbcron_job_clear(&j[0]);
	assert_int_equal(store_job_get(c->s, "d", &got, &c->err), DBCRON_ENOTFOUND);

	/* a cycle in one put, and one through a stored job */
	conf_needs_job(&j[0], "x", "y");
	conf_needs_job(&j[1], "y", "a,x");
	assert_int_equal(conf_upsert(c, j, 2), DBCRON_EINVAL);
	assert_non_null(strstr(c->err.msg, "x -> y -> x"));
	dbcron_job_clear(&j[0]);
	dbcron_job_clear(&j[1]);
	assert_int_equal(store_job_get(c->s, "x", &got, &c->err), DBCRON_ENOTFOUND);
	assert_int_equal(store_job_get(c->s, "y", &got, &c->err), DBCRON_ENOTFOUND);
	conf_needs_job(&j[0], "a", "c");
	assert_int_equal(conf_upsert(c, j, 1), DBCRON_EINVAL);
	assert_non_null(strstr(c->err.msg, "a -> c -> a"));
	dbcron_job_clear(&j[0]);
	CONF_OK(c, store_job_get(c->s, "a", &got, &c->err));
	assert_int_equal(got.kind, DBCRON_SCHED_EVERY);
	dbcron_job_clear(&got);

	/* a diamond is no cycle: f -> c -> a and f -> e -> a */
	conf_needs_job(&j[0], "e", "b,a");
	conf_needs_job(&j[1], "f", "c,e");
	CONF_OK(c, conf_upsert(c, j, 2));
	dbcron_job_clear(&j[0]);
	dbcron_job_clear(&j[1]);
	CONF_OK(c, store_job_delete(c->s, "f", &c->err));
	CONF_OK(c, store_job_delete(c->s, "e", &c->err));

	/* a needed job is neither deleted nor renamed without force */
	assert_int_equal(store_job_delete(c->s, "a", &c->err), DBCRON_ECONSTRAINT);
	assert_non_null(strstr(c->err.msg, "needed by c"));
	assert_int_equal(store_job_rename(c->s, "a", "a2", &c->err), DBCRON_ECONSTRAINT);
	CONF_OK(c, store_job_get(c->s, "a", &got, &c->err));
	dbcron_job_clear(&got);

	/* force: deleted, the dependent set aside and named */
	CONF_OK(c, store_job_delete_force(c->s, "a", true, detached, sizeof(detached), &c->err));
	assert_string_equal(detached, "c");
	CONF_OK(c, store_job_get(c->s, "c", &got, &c->err));
	assert_non_null(got.set_aside);
	dbcron_job_clear(&got);
	/* the set-aside dependent still needs b; once it is gone, b goes */
	assert_int_equal(store_job_delete(c->s, "b", &c->err), DBCRON_ECONSTRAINT);
	CONF_OK(c, store_job_delete(c->s, "c", &c->err));
	CONF_OK(c, store_job_delete_force(c->s, "b", false, detached, sizeof(detached), &c->err));
	assert_string_equal(detached, "");
}

#define STORE_CONFORMANCE_NEEDS_TESTS                                              \
	CONF_T(conf_test_needs_fanin), CONF_T(conf_test_needs_concurrent),         \
	CONF_T(conf_test_needs_refusals)

#endif
