/*
 * Conformance tests, part two: one test per drift the two old backends had
 * (each decided once in the protocol now), the run state machine checker,
 * and the fault seam, which every store operation is driven through.
 * Included after store_conformance.h; list STORE_CONFORMANCE_FAULT_TESTS.
 */
#ifndef DBCRON_TEST_STORE_CONFORMANCE_FAULTS_H
#define DBCRON_TEST_STORE_CONFORMANCE_FAULTS_H

#include "store/dialect.h"

static dbcron_run conf_lock_run(const char *name, int64_t fire_at, int64_t finished)
{
	dbcron_run r;
	memset(&r, 0, sizeof(r));
	r.job_name = (char *)name;
	r.fire_at = fire_at;
	r.due_at = -1;
	r.attempt = 1;
	r.state = DBCRON_RUN_SUCCEEDED;
	r.started_ms = -1;
	r.finished_ms = finished;
	return r;
}

/* Drift: log_run with fire_at < 0 was "database now" on SQLite and
 * run->fire_at + k on PostgreSQL; it is database now, bumped until unique. */
static void conf_test_drift_log_run_now(void **state)
{
	conf_ctx *c = *state;
	conf_runs rs = {.n = 0};
	int64_t before = conf_now(c);
	dbcron_run r = conf_lock_run("lock:x", -1, -1);
	CONF_OK(c, store_log_run(c->s, &r, &c->err));
	int64_t after = conf_now(c);
	conf_list(c, "lock:x", 0, -1, 0, &rs);
	assert_int_equal(rs.n, 1);
	assert_in_range(rs.rows[0].fire_at, before, after);
	assert_in_range(rs.rows[0].finished_ms, before, after);
	int64_t f = rs.rows[0].fire_at;
	r.fire_at = f; /* taken: moves 1 ms on */
	CONF_OK(c, store_log_run(c->s, &r, &c->err));
	conf_list(c, "lock:x", 0, -1, 0, &rs);
	assert_int_equal(rs.n, 2);
	assert_int_equal(rs.rows[0].fire_at, f);
	assert_int_equal(rs.rows[1].fire_at, f + 1);
	conf_runs_clear(&rs);
	/* A new row cannot start in a live state by the side door. */
	r.state = DBCRON_RUN_RUNNING;
	assert_int_equal(store_log_run(c->s, &r, &c->err), DBCRON_EINTERNAL);
}

/* Drift: the prune predicates differed.  Now: terminal runs whose fire and
 * finish are both before the cutoff; SCHEDULED and RUNNING never. */
static void conf_test_drift_prune(void **state)
{
	conf_ctx *c = *state;
	conf_runs rs = {.n = 0};
	conf_planner p = {.stop = -1};
	store_claim_result res;
	int64_t now = conf_now(c), deleted = -1;

	dbcron_run a = conf_lock_run("lock:a", now - 20000, now - 19999);
	dbcron_run b = conf_lock_run("lock:b", now - 20000, -1);
	CONF_OK(c, store_log_run(c->s, &a, &c->err));
	CONF_OK(c, store_log_run(c->s, &b, &c->err));
	conf_put(c, 1, "old", now - 20000);
	CONF_OK(c, conf_claim(c, c->s, "n1", "t1", 10, &p, &res));
	assert_int_equal(res.nruns, 1);
	store_claim_result_clear(&res);

	CONF_OK(c, store_prune_runs(c->s, now - 10000, &deleted, &c->err));
	assert_int_equal(deleted, 1); /* a only: b finished after the cutoff */
	CONF_OK(c, store_prune_runs(c->s, now + 60000, &deleted, &c->err));
	assert_int_equal(deleted, 1); /* b; the old SCHEDULED run stays */
	conf_list(c, NULL, 0, -1, 0, &rs);
	assert_int_equal(rs.n, 1);
	assert_int_equal(rs.rows[0].state, DBCRON_RUN_SCHEDULED);
	conf_runs_clear(&rs);
}

/* Drift: a non-string or non-UTF-8 argv element was rejected on SQLite and
 * stored as "" (or "out of memory") on PostgreSQL.  Refused on write, with
 * the argument named, and nothing written. */
static void conf_test_drift_argv(void **state)
{
	conf_ctx *c = *state;
	dbcron_job j, got;
	conf_job(&j, "argv", 1000);
	dbcron__free(j.handler);
	j.handler = NULL;
	j.executor = DBCRON_EXEC_SHELL;
	j.argv = dbcron__calloc(4, sizeof(char *));
	j.argv[0] = dbcron__strdup("printf");
	j.argv[1] = dbcron__strdup("a \"quoted\"\nline\t\\ ü €");
	j.argv[2] = dbcron__strdup("bad \xff byte");
	j.argc = 3;
	assert_int_equal(conf_upsert(c, &j, 1),
			 DBCRON_EINVAL);
	assert_non_null(strstr(c->err.msg, "argument 3 is not valid UTF-8"));
	assert_int_equal(store_job_get(c->s, "argv", &got, &c->err), DBCRON_ENOTFOUND);
	dbcron_job_clear(&got);
	j.argc = 2;
	dbcron__free(j.argv[2]);
	j.argv[2] = NULL;
	CONF_OK(c, conf_upsert(c, &j, 1));
	CONF_OK(c, store_job_get(c->s, "argv", &got, &c->err));
	assert_int_equal(got.argc, 2);
	assert_string_equal(got.argv[1], j.argv[1]);
	dbcron_job_clear(&got);
	dbcron_job_clear(&j);
}

/* Drift: "keep the schedule" read zone NULL, "" and "UTC" three ways. */
static void conf_test_drift_zone(void **state)
{
	conf_ctx *c = *state;
	dbcron_job j, got;
	const char *same[] = {"UTC", "", NULL};
	conf_job(&j, "z", 100000);
	CONF_OK(c, conf_upsert(c, &j, 1));
	for (int i = 0; i < 3; i++) {
		dbcron__free(j.tz);
		j.tz = same[i] ? dbcron__strdup(same[i]) : NULL;
		j.next_fire_at = 5;
		CONF_OK(c, conf_upsert(c, &j, 1));
		CONF_OK(c, store_job_get(c->s, "z", &got, &c->err));
		assert_int_equal(got.next_fire_at, 100000);
		dbcron_job_clear(&got);
	}
	dbcron__free(j.tz);
	j.tz = dbcron__strdup("Europe/Berlin");
	j.next_fire_at = 5;
	CONF_OK(c, conf_upsert(c, &j, 1));
	CONF_OK(c, store_job_get(c->s, "z", &got, &c->err));
	assert_int_equal(got.next_fire_at, 5); /* a new zone is a new series */
	assert_string_equal(got.tz, "Europe/Berlin");
	dbcron_job_clear(&got);
	dbcron_job_clear(&j);
}

/* Drift: the bump-until-unique loops had three limits and two codes. */
static void conf_test_drift_trigger_bump(void **state)
{
	conf_ctx *c = *state;
	int64_t id[3], at[3];
	conf_put(c, 1, "t", -1);
	for (int i = 0; i < 3; i++)
		CONF_OK(c, store_job_trigger(c->s, "t0000", &id[i], &at[i], &c->err));
	assert_true(at[0] < at[1] && at[1] < at[2]);
	assert_true(id[0] != id[1] && id[1] != id[2]);
}

/* Drift: argument guards existed only in the SQLite backend. */
static void conf_test_guards(void **state)
{
	conf_ctx *c = *state;
	store_claim_result res;
	store_update u;
	dbcron_job j[2];
	memset(&u, 0, sizeof(u));
	assert_int_equal(store_claim(c->s, NULL, &res, &c->err), DBCRON_EINVAL);
	u.token = "t";
	u.state = DBCRON_RUN_SCHEDULED;
	CONF_OK(c, store_apply(c->s, "n", &u, 1, &c->err)); /* dropped, not written */
	assert_true(u.invalid && !u.applied);
	u.state = 99;
	CONF_OK(c, store_apply(c->s, "n", &u, 1, &c->err));
	assert_true(u.invalid && !u.applied);
	assert_int_equal(store_apply(c->s, NULL, &u, 1, &c->err), DBCRON_EINVAL);
	store_node_info ni = {.node_id = "n", .incarnation = NULL, .lease_ms = 1000};
	assert_int_equal(store_node_register(c->s, &ni, &c->err), DBCRON_EINVAL);
	assert_int_equal(store_job_get(c->s, NULL, &j[0], &c->err), DBCRON_EINVAL);
	dbcron_job_clear(&j[0]);
	conf_job(&j[0], "twice", 1);
	conf_job(&j[1], "twice", 1);
	assert_int_equal(conf_upsert(c, j, 2),
			 DBCRON_EINVAL);
	assert_non_null(strstr(c->err.msg, "given twice"));
	dbcron_job_clear(&j[0]);
	dbcron_job_clear(&j[1]);
	assert_int_equal(store_lock_renew(c->s, "x", "", 1, 100, NULL, &c->err), DBCRON_EINVAL);
}

/* Drift: two URL maskers.  One now, for every scheme. */
static void conf_test_url_mask(void **state)
{
	(void)state;
	char buf[128];
	dbcron_err err;
	store *s = NULL;
	store_mask_url("mysql://u:Sup3rSecret@h:3306/db", buf, sizeof(buf));
	assert_string_equal(buf, "mysql://u:***@h:3306/db");
	store_mask_url("host=h password='a b' dbname=x", buf, sizeof(buf));
	assert_string_equal(buf, "host=h password=*** dbname=x");
	assert_int_equal(store_open("oracle://u:Sup3rSecret@h/db", &s, &err), DBCRON_EINVAL);
	assert_null(strstr(err.msg, "Sup3rSecret"));
}

/* The run state machine: a chain that leaves a terminal state is not
 * written and marked invalid, and the rest of its batch still goes out
 * (one bad run once held up every write of its node, tried again
 * forever). */
static void conf_test_state_machine(void **state)
{
	conf_ctx *c = *state;
	conf_planner p = {.stop = -1};
	store_claim_result res;
	conf_runs rs = {.n = 0};
	conf_put(c, 2, "sm", 1000);
	CONF_OK(c, conf_claim(c, c->s, "n1", "t1", 10, &p, &res));
	assert_int_equal(res.nruns, 2);
	store_update ok[2] = {conf_update(&res.runs[0], DBCRON_RUN_RUNNING),
			      conf_update(&res.runs[0], DBCRON_RUN_SUCCEEDED)};
	CONF_OK(c, store_apply(c->s, "n1", ok, 2, &c->err));
	assert_true(ok[0].applied && ok[1].applied);
	store_update bad[3] = {conf_update(&res.runs[1], DBCRON_RUN_SUCCEEDED),
			       conf_update(&res.runs[1], DBCRON_RUN_RUNNING),
			       conf_update(&res.runs[0], DBCRON_RUN_SCHEDULED)};
	CONF_OK(c, store_apply(c->s, "n1", bad, 3, &c->err));
	assert_false(bad[0].applied || bad[1].applied || bad[2].applied);
	assert_true(bad[0].invalid && bad[1].invalid && bad[2].invalid);
	conf_list(c, NULL, DBCRON_RUN_SCHEDULED, -1, 0, &rs);
	assert_int_equal(rs.n, 1);
	assert_int_equal(rs.rows[0].id, res.runs[1].run.id);
	conf_runs_clear(&rs);
	/* beside a valid update, which goes out */
	store_update mixed[3] = {conf_update(&res.runs[1], DBCRON_RUN_RUNNING),
				 conf_update(&res.runs[0], DBCRON_RUN_RUNNING),
				 conf_update(&res.runs[0], DBCRON_RUN_SUCCEEDED)};
	mixed[1].token = NULL; /* a run's update without its token: invalid */
	CONF_OK(c, store_apply(c->s, "n1", mixed, 3, &c->err));
	assert_true(mixed[0].applied && !mixed[0].invalid);
	assert_true(mixed[1].invalid && mixed[2].invalid);
	conf_list(c, NULL, DBCRON_RUN_RUNNING, -1, 0, &rs);
	assert_int_equal(rs.n, 1);
	assert_int_equal(rs.rows[0].id, res.runs[1].run.id);
	conf_runs_clear(&rs);
	/* A terminal row is final: a second end is not applied. */
	store_update again = conf_update(&res.runs[0], DBCRON_RUN_FAILED);
	CONF_OK(c, store_apply(c->s, "n1", &again, 1, &c->err));
	assert_false(again.applied);
	store_claim_result_clear(&res);
	assert_true(dbcron_run_transition_ok(DBCRON_RUN_NONE, DBCRON_RUN_SCHEDULED));
	assert_false(dbcron_run_transition_ok(DBCRON_RUN_SUCCEEDED, DBCRON_RUN_RUNNING));
	assert_false(dbcron_run_transition_ok(DBCRON_RUN_NONE, DBCRON_RUN_RUNNING));
}

/* ---- the fault seam ---- */

/* Everything the per-operation test needs in the database. */
typedef struct conf_world {
	store_claim_result res;
	int64_t fence;
} conf_world;

static int op_now(conf_ctx *c, conf_world *w)
{
	(void)w;
	int64_t t;
	return store_now_ms(c->s, &t, &c->err);
}
static int op_check_schema(conf_ctx *c, conf_world *w)
{
	(void)w;
	return store_check_schema(c->s, &c->err);
}
static int op_migrate(conf_ctx *c, conf_world *w)
{
	(void)w;
	return store_migrate(c->s, NULL, NULL, &c->err);
}
static int op_job_put(conf_ctx *c, conf_world *w)
{
	(void)w;
	dbcron_job j;
	conf_job(&j, "put", 1);
	int rc = conf_upsert(c, &j, 1);
	dbcron_job_clear(&j);
	return rc;
}
static int op_job_get(conf_ctx *c, conf_world *w)
{
	(void)w;
	dbcron_job j;
	int rc = store_job_get(c->s, "f0000", &j, &c->err);
	dbcron_job_clear(&j);
	return rc;
}
static int conf_count_cb(void *ctx, const void *row)
{
	(void)row;
	(*(int *)ctx)++;
	return 0;
}
static int op_job_list(conf_ctx *c, conf_world *w)
{
	(void)w;
	int n = 0;
	return store_job_list(c->s, (store_job_cb)conf_count_cb, &n, &c->err);
}
static int op_job_pause(conf_ctx *c, conf_world *w)
{
	(void)w;
	return store_job_set_paused(c->s, "put", true, -1, &c->err);
}
static int op_job_trigger(conf_ctx *c, conf_world *w)
{
	(void)w;
	int64_t id, at;
	return store_job_trigger(c->s, "put", &id, &at, &c->err);
}
static int op_job_delete(conf_ctx *c, conf_world *w)
{
	(void)w;
	return store_job_delete(c->s, "put", &c->err);
}
static int op_register(conf_ctx *c, conf_world *w)
{
	(void)w;
	store_node_info ni = {.node_id = "n1", .incarnation = "i1", .host = "h", .pid = 1,
			      .workers = 1, .lease_ms = 60000};
	return store_node_register(c->s, &ni, &c->err);
}
static int op_heartbeat(conf_ctx *c, conf_world *w)
{
	(void)w;
	int64_t t;
	return store_node_heartbeat(c->s, "n1", "i1", 60000, &t, &c->err);
}
static int op_claim(conf_ctx *c, conf_world *w)
{
	conf_planner p = {.stop = -1};
	store_claim_result_clear(&w->res);
	return conf_claim(c, c->s, "n1", "tok", 10, &p, &w->res);
}
static int op_apply(conf_ctx *c, conf_world *w)
{
	if (!w->res.nruns)
		return DBCRON_ENOTFOUND;
	store_update u = conf_update(&w->res.runs[0], DBCRON_RUN_RUNNING);
	return store_apply(c->s, "n1", &u, 1, &c->err);
}
static int op_job_running(conf_ctx *c, conf_world *w)
{
	(void)w;
	bool r;
	return store_job_running(c->s, 1, 0, &r, &c->err);
}
static int op_release(conf_ctx *c, conf_world *w)
{
	int64_t id = w->res.nruns ? w->res.runs[0].run.id : 0;
	const char *tok = "tok";
	return store_runs_release(c->s, "n1", &id, &tok, 1, &c->err);
}
static int op_reap(conf_ctx *c, conf_world *w)
{
	(void)w;
	size_t n;
	return store_reap(c->s, &n, &c->err);
}
static int op_runs_list(conf_ctx *c, conf_world *w)
{
	(void)w;
	int n = 0;
	store_run_filter f = {.job = NULL, .state = 0, .since_ms = -1, .limit = 0};
	return store_runs_list(c->s, &f, (store_run_cb)conf_count_cb, &n, &c->err);
}
static int op_nodes_list(conf_ctx *c, conf_world *w)
{
	(void)w;
	int n = 0;
	return store_nodes_list(c->s, (store_node_cb)conf_count_cb, &n, &c->err);
}
static int op_lock_acquire(conf_ctx *c, conf_world *w)
{
	int64_t until;
	store_lock_row h;
	int rc = store_lock_acquire(c->s, "L", "o", 60000, &w->fence, &until, &h, &c->err);
	store_lock_row_clear(&h);
	return rc == DBCRON_ELOCKED ? DBCRON_OK : rc;
}
static int op_lock_renew(conf_ctx *c, conf_world *w)
{
	int64_t until;
	return store_lock_renew(c->s, "L", "o", w->fence, 60000, &until, &c->err);
}
static int op_lock_list(conf_ctx *c, conf_world *w)
{
	(void)w;
	int n = 0;
	return store_lock_list(c->s, (store_lock_cb)conf_count_cb, &n, &c->err);
}
static int op_lock_release(conf_ctx *c, conf_world *w)
{
	return store_lock_release(c->s, "L", "o", w->fence, &c->err);
}
static int op_log_run(conf_ctx *c, conf_world *w)
{
	(void)w;
	dbcron_run r = conf_lock_run("lock:L", -1, -1);
	return store_log_run(c->s, &r, &c->err);
}
static int op_prune(conf_ctx *c, conf_world *w)
{
	(void)w;
	int64_t n;
	return store_prune_runs(c->s, 0, &n, &c->err);
}
static int op_node_stop(conf_ctx *c, conf_world *w)
{
	/* a node stops only once its running run has its outcome */
	if (w->res.nruns) {
		store_update u = conf_update(&w->res.runs[0], DBCRON_RUN_SUCCEEDED);
		u.finished_ms = 1;
		int rc = store_apply(c->s, "n1", &u, 1, &c->err);
		if (rc)
			return rc;
	}
	return store_node_stop(c->s, "n1", "i1", &c->err);
}

/* Every operation: a lost connection on its first statement fails the
 * call with DBCRON_ECONN and leaves the database as it was, so the same
 * call then succeeds. */
static void conf_test_fault_every_op(void **state)
{
	conf_ctx *c = *state;
	static const struct {
		const char *name;
		int (*fn)(conf_ctx *, conf_world *);
	} ops[] = {
		{"now_ms", op_now}, {"check_schema", op_check_schema}, {"migrate", op_migrate},
		{"job_put", op_job_put}, {"job_get", op_job_get}, {"job_list", op_job_list},
		{"job_trigger", op_job_trigger}, {"job_set_paused", op_job_pause},
		{"node_register", op_register}, {"node_heartbeat", op_heartbeat},
		{"claim", op_claim}, {"apply", op_apply}, {"job_running", op_job_running},
		{"runs_release", op_release}, {"reap", op_reap}, {"runs_list", op_runs_list},
		{"nodes_list", op_nodes_list}, {"lock_acquire", op_lock_acquire},
		{"lock_renew", op_lock_renew}, {"lock_list", op_lock_list},
		{"lock_release", op_lock_release}, {"log_run", op_log_run},
		{"prune_runs", op_prune}, {"job_delete", op_job_delete},
		{"node_stop", op_node_stop},
	};
	conf_world w;
	memset(&w, 0, sizeof(w));
	conf_put(c, 1, "f", 1000);
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		store_fault f = {.stmt = -1, .nth = 1, .times = 1, .kind = STORE_FAULT_CONN};
		CONF_OK(c, store_fault_add(c->s, &f, &c->err));
		int rc = ops[i].fn(c, &w);
		if (rc != DBCRON_ECONN)
			fail_msg("%s under a lost connection: %d (%s) %s", ops[i].name, rc,
				 dbcron_strerror(rc), c->err.msg);
		assert_int_equal(store_fault_hits(c->s), 1);
		store_fault_clear(c->s);
		rc = ops[i].fn(c, &w);
		if (rc != DBCRON_OK)
			fail_msg("%s after the fault: %d (%s) %s", ops[i].name, rc,
				 dbcron_strerror(rc), c->err.msg);
	}
	store_claim_result_clear(&w.res);
}

/* A COMMIT whose reply was lost may have committed: the call says
 * DBCRON_ECONN and the job is there. */
static void conf_test_fault_commit_lost(void **state)
{
	conf_ctx *c = *state;
	dbcron_job j;
	store_fault f = {.stmt = ST_COMMIT, .nth = 1, .times = 1, .kind = STORE_FAULT_REPLY_LOST};
	CONF_OK(c, store_fault_add(c->s, &f, &c->err));
	assert_int_equal(op_job_put(c, NULL), DBCRON_ECONN);
	assert_non_null(strstr(c->err.msg, "reply was lost"));
	CONF_OK(c, store_job_get(c->s, "put", &j, &c->err));
	dbcron_job_clear(&j);
}

/* A failed write inside apply's transaction rolls the whole batch back:
 * nothing is marked applied and the run is still SCHEDULED. */
static void conf_test_fault_apply_rolls_back(void **state)
{
	conf_ctx *c = *state;
	conf_planner p = {.stop = -1};
	store_claim_result res;
	conf_runs rs = {.n = 0};
	conf_put(c, 1, "a", 1000);
	CONF_OK(c, conf_claim(c, c->s, "n1", "t1", 10, &p, &res));
	assert_int_equal(res.nruns, 1);
	store_update u = conf_update(&res.runs[0], DBCRON_RUN_FAILED);
	u.finished_ms = 2000;
	u.retry_due_at = 5000;
	store_fault f = {.stmt = ST_RETRY_INSERT, .nth = 1, .times = 1, .kind = STORE_FAULT_BUSY};
	CONF_OK(c, store_fault_add(c->s, &f, &c->err));
	assert_int_equal(store_apply(c->s, "n1", &u, 1, &c->err), DBCRON_EBUSY);
	assert_false(u.applied);
	conf_list(c, NULL, 0, -1, 0, &rs);
	assert_int_equal(rs.n, 1);
	assert_int_equal(rs.rows[0].state, DBCRON_RUN_SCHEDULED);
	conf_runs_clear(&rs);
	/* Once the database answers again the same batch lands. */
	CONF_OK(c, store_apply(c->s, "n1", &u, 1, &c->err));
	assert_true(u.applied);
	conf_list(c, NULL, 0, -1, 0, &rs);
	assert_int_equal(rs.n, 2); /* the failed attempt and its retry */
	conf_runs_clear(&rs);
	store_claim_result_clear(&res);
}

/* nth counts matching statements from when the fault was set; a stall
 * delays but does not fail; DBCRON_TEST_FAULTS has the same form. */
static void conf_test_fault_nth_and_spec(void **state)
{
	conf_ctx *c = *state;
	int64_t t;
	store_fault f = {.stmt = ST_NOW, .nth = 2, .times = 1, .kind = STORE_FAULT_CONSTRAINT};
	CONF_OK(c, store_fault_add(c->s, &f, &c->err));
	CONF_OK(c, store_now_ms(c->s, &t, &c->err));
	assert_int_equal(store_now_ms(c->s, &t, &c->err), DBCRON_ECONSTRAINT);
	CONF_OK(c, store_now_ms(c->s, &t, &c->err));
	store_fault_clear(c->s);
	CONF_OK(c, store_fault_add_spec(c->s, "stmt=now,kind=stall,stall=50,nth=0,times=0", &c->err));
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	CONF_OK(c, store_now_ms(c->s, &t, &c->err));
	CONF_OK(c, store_now_ms(c->s, &t, &c->err));
	clock_gettime(CLOCK_MONOTONIC, &b);
	assert_true((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 >= 100);
	assert_int_equal(store_fault_hits(c->s), 2);
	store_fault_clear(c->s);
	assert_int_equal(store_fault_add_spec(c->s, "stmt=nosuch,kind=busy", &c->err), DBCRON_EINVAL);
	assert_non_null(strstr(c->err.msg, "unknown statement 'nosuch'"));
}

/* Out of memory at every allocation of a job put and a claim: an error,
 * never a crash, and nothing half-written. */
static void conf_test_alloc_failures(void **state)
{
	conf_ctx *c = *state;
	int rc = DBCRON_ENOMEM;
	dbcron_job j, got;
	for (long n = 1; n < 400 && rc != DBCRON_OK; n++) {
		conf_job(&j, "put", 1);
		dbcron__alloc_fail_at(n);
		rc = conf_upsert(c, &j, 1);
		dbcron__alloc_fail_at(0);
		dbcron_job_clear(&j);
		if (rc == DBCRON_OK)
			break;
		assert_int_equal(rc, DBCRON_ENOMEM);
		assert_int_equal(store_job_get(c->s, "put", &got, &c->err), DBCRON_ENOTFOUND);
		dbcron_job_clear(&got);
	}
	assert_int_equal(rc, DBCRON_OK);
	conf_world w;
	memset(&w, 0, sizeof(w));
	rc = DBCRON_ENOMEM;
	for (long n = 1; n < 400 && rc != DBCRON_OK; n++) {
		dbcron__alloc_fail_at(n);
		rc = op_claim(c, &w);
		dbcron__alloc_fail_at(0);
		if (rc != DBCRON_OK)
			assert_int_equal(rc, DBCRON_ENOMEM);
	}
	assert_int_equal(rc, DBCRON_OK);
	assert_int_equal(w.res.nruns, 1);
	store_claim_result_clear(&w.res);
}

/* Captured output may hold any bytes: what is not UTF-8 becomes '?' in
 * every dialect (a server that refuses it would fail the whole batch),
 * valid UTF-8 and newlines arrive as written, and each run of the batch
 * gets its own output. */
static void conf_test_apply_output_bytes(void **state)
{
	conf_ctx *c = *state;
	int64_t now = conf_now(c);
	conf_planner p = {.stop = -1};
	store_claim_result r;
	conf_runs rs = {.n = 0};
	conf_put(c, 2, "ob", now - 100);
	CONF_OK(c, conf_claim(c, c->s, "n1", "tok", 10, &p, &r));
	assert_int_equal(r.nruns, 2);
	store_update u[2];
	for (int i = 0; i < 2; i++) {
		u[i] = conf_update(&r.runs[i], DBCRON_RUN_SUCCEEDED);
		u[i].finished_ms = now;
	}
	u[0].output = "ok \xff\xfe end\r\n";
	u[0].error = "line one\nline two";
	u[1].output = "fine \xc3\xbc \xe2\x82\xac";
	CONF_OK(c, store_apply(c->s, "n1", u, 2, &c->err));
	assert_true(u[0].applied && u[1].applied);
	for (int i = 0; i < 2; i++) {
		conf_list(c, r.runs[i].run.job_name, 0, -1, 0, &rs);
		assert_int_equal(rs.n, 1);
		assert_int_equal(rs.rows[0].state, DBCRON_RUN_SUCCEEDED);
		if (i == 0) {
			assert_string_equal(rs.rows[0].output, "ok ?? end\r\n");
			assert_string_equal(rs.rows[0].error, "line one\nline two");
		} else {
			assert_string_equal(rs.rows[0].output, u[1].output);
		}
		conf_runs_clear(&rs);
	}
	store_claim_result_clear(&r);
}

/* Job ids are never reused: a run of a deleted job must never name the
 * row of a job added after it.  The deleted job's orphan run ends
 * ABANDONED "job deleted" rather than staying SCHEDULED. */
static void conf_test_job_ids_not_reused(void **state)
{
	conf_ctx *c = *state;
	dbcron_job j, got;
	int64_t run_id, fire_at;
	conf_job(&j, "f", -1);
	CONF_OK(c, conf_upsert(c, &j, 1));
	dbcron_job_clear(&j);
	CONF_OK(c, store_job_get(c->s, "f", &got, &c->err));
	int64_t fid = got.id;
	dbcron_job_clear(&got);
	CONF_OK(c, store_job_trigger(c->s, "f", &run_id, &fire_at, &c->err));
	CONF_OK(c, store_job_delete(c->s, "f", &c->err));
	conf_job(&j, "g", -1);
	CONF_OK(c, conf_upsert(c, &j, 1));
	dbcron_job_clear(&j);
	CONF_OK(c, store_job_get(c->s, "g", &got, &c->err));
	assert_true(got.id > fid);
	dbcron_job_clear(&got);
	conf_runs rs = {.n = 0};
	conf_list(c, "f", 0, -1, 0, &rs);
	assert_int_equal(rs.n, 1);
	assert_int_equal(rs.rows[0].state, DBCRON_RUN_ABANDONED);
	assert_string_equal(rs.rows[0].error, "job deleted");
	conf_runs_clear(&rs);
}

/* A job the planner cannot handle is set aside with its reason and the
 * claim goes on for the others; a put of the job clears it, and so does a
 * resume. */
static void conf_test_set_aside(void **state)
{
	conf_ctx *c = *state;
	int64_t now = conf_now(c);
	conf_put(c, 3, "sa", now - 100);
	conf_planner p = {.stop = -1, .fail = "sa0001"};
	store_claim_result r;
	CONF_OK(c, conf_claim(c, c->s, "n1", "t1", 10, &p, &r));
	assert_int_equal(r.nruns, 2);
	assert_int_equal(r.naside, 1);
	assert_string_equal(r.aside[0].name, "sa0001");
	assert_string_equal(r.aside[0].why, "cannot plan: zone 'Nowhere/Atlantis' not found");
	for (size_t i = 0; i < r.nruns; i++)
		assert_string_not_equal(r.runs[i].run.job_name, "sa0001");
	for (size_t i = 0; i < r.njobs; i++)
		assert_string_not_equal(r.jobs[i].name, "sa0001");
	store_claim_result_clear(&r);
	dbcron_job j;
	CONF_OK(c, store_job_get(c->s, "sa0001", &j, &c->err));
	assert_string_equal(j.set_aside, "cannot plan: zone 'Nowhere/Atlantis' not found");
	assert_int_equal(j.next_fire_at, -1);
	/* The next claim does not see it again. */
	p.calls = 0;
	CONF_OK(c, conf_claim(c, c->s, "n1", "t2", 10, &p, &r));
	assert_int_equal(r.naside, 0);
	store_claim_result_clear(&r);
	/* A put of the job (fixed or not) clears the mark. */
	j.next_fire_at = now + 60000;
	CONF_OK(c, conf_upsert(c, &j, 1));
	dbcron_job_clear(&j);
	CONF_OK(c, store_job_get(c->s, "sa0001", &j, &c->err));
	assert_null(j.set_aside);
	dbcron_job_clear(&j);
	/* A resume clears it too. */
	p.fail = "sb0000";
	conf_put(c, 1, "sb", now - 50);
	CONF_OK(c, conf_claim(c, c->s, "n1", "t3", 10, &p, &r));
	assert_int_equal(r.naside, 1);
	store_claim_result_clear(&r);
	CONF_OK(c, store_job_set_paused(c->s, "sb0000", false, now + 1000, &c->err));
	CONF_OK(c, store_job_get(c->s, "sb0000", &j, &c->err));
	assert_null(j.set_aside);
	assert_int_equal(j.next_fire_at, now + 1000);
	dbcron_job_clear(&j);
}

/* A claim never returns more than its bound, even when one job owes
 * more fires (catch-up); the rest stay for the next claim. */
static void conf_test_claim_bound(void **state)
{
	conf_ctx *c = *state;
	int64_t now = conf_now(c);
	conf_put(c, 1, "cb", now - 10000);
	conf_planner p = {.stop = -1, .nfires = 10};
	store_claim_result r;
	CONF_OK(c, conf_claim(c, c->s, "n1", "t1", 3, &p, &r));
	assert_int_equal(r.nruns, 3);
	store_claim_result_clear(&r);
	dbcron_job j;
	CONF_OK(c, store_job_get(c->s, "cb0000", &j, &c->err));
	assert_int_equal(j.next_fire_at, now - 10000 + 3); /* the first left out */
	dbcron_job_clear(&j);
}

/* Retention goes in bounded batches, the oldest first; the whole prune
 * loops over them. */
static void conf_test_prune_batches(void **state)
{
	conf_ctx *c = *state;
	int64_t now = conf_now(c), d = -1;
	for (int i = 0; i < 12; i++) {
		dbcron_run r = conf_lock_run("lock:p", now - 100000 + i, now - 90000);
		CONF_OK(c, store_log_run(c->s, &r, &c->err));
	}
	CONF_OK(c, store_prune_runs_some(c->s, now - 1000, 5, &d, &c->err));
	assert_int_equal(d, 5);
	conf_runs rs = {.n = 0};
	conf_list(c, "lock:p", 0, -1, 0, &rs);
	assert_int_equal(rs.n, 7);
	assert_int_equal(rs.rows[0].fire_at, now - 100000 + 5); /* the oldest went first */
	conf_runs_clear(&rs);
	CONF_OK(c, store_prune_runs(c->s, now - 1000, &d, &c->err));
	assert_int_equal(d, 7);
	assert_int_equal(store_prune_runs_some(c->s, now, 0, &d, &c->err), DBCRON_EINVAL);
}

#define STORE_CONFORMANCE_FAULT_TESTS                                            \
	CONF_T(conf_test_drift_log_run_now), CONF_T(conf_test_drift_prune),      \
	CONF_T(conf_test_drift_argv), CONF_T(conf_test_drift_zone),              \
	CONF_T(conf_test_drift_trigger_bump), CONF_T(conf_test_guards),          \
	cmocka_unit_test(conf_test_url_mask), CONF_T(conf_test_state_machine),   \
	CONF_T(conf_test_fault_every_op), CONF_T(conf_test_fault_commit_lost),   \
	CONF_T(conf_test_fault_apply_rolls_back),                                \
	CONF_T(conf_test_fault_nth_and_spec), CONF_T(conf_test_alloc_failures),  \
	CONF_T(conf_test_apply_output_bytes), CONF_T(conf_test_job_ids_not_reused), \
	CONF_T(conf_test_set_aside), CONF_T(conf_test_claim_bound),             \
	CONF_T(conf_test_prune_batches)

#endif
