/*
 * Store conformance, issue 23: one job's text never stops the claim,
 * admin edits that race never undo each other.  Included after
 * store_conformance.h by every backend's test (its helpers are used).
 */
#ifndef DBCRON_TEST_STORE_CONFORMANCE_EDITS_H
#define DBCRON_TEST_STORE_CONFORMANCE_EDITS_H

#include <pthread.h>

#include "core/text.h"

/* 130 x U+20AC (3 bytes each): a handler name whose routing reason the
 * old 400-byte buffer cut inside a character. */
static char *conf_euros(int n)
{
	char *s = dbcron__calloc((size_t)n * 3 + 1, 1);
	assert_non_null(s);
	for (int i = 0; i < n; i++)
		memcpy(s + 3 * i, "\xe2\x82\xac", 3);
	return s;
}

/* Issue 23 item 1: a handler job stored before names were bounded, whose
 * handler no live node has, is stranded; the claim that records its fire
 * MISFIRED with the reason succeeds on every backend (PostgreSQL and
 * MariaDB refused the cut reason and with it every claim), the reason is
 * valid UTF-8, and the other due job is still claimed.  Validation now
 * refuses such a name. */
static void conf_test_claim_long_handler(void **state)
{
	conf_ctx *c = *state;
	int64_t now = conf_now(c);
	dbcron_job jobs[2];
	conf_job(&jobs[0], "euro", now - 5000);
	jobs[0].misfire_threshold_ms = 1000;
	dbcron__free(jobs[0].handler);
	jobs[0].handler = conf_euros(130);
	conf_job(&jobs[1], "plain", now - 500);
	CONF_OK(c, conf_upsert(c, jobs, 2));
	for (int i = 0; i < 2; i++)
		dbcron_job_clear(&jobs[i]);

	static const char *const noop_only[] = {"noop"};
	conf_planner p = {.stop = -1};
	store_claim_result r;
	CONF_OK(c, conf_claim_routed(c, "n1", "t1", noop_only, 1, &p, &r));
	assert_int_equal(r.nruns, 1);
	assert_string_equal(r.runs[0].run.job_name, "plain");
	store_claim_result_clear(&r);
	conf_runs rs = {0};
	conf_list(c, "euro", DBCRON_RUN_MISFIRED, -1, 0, &rs);
	assert_true(rs.n >= 1);
	assert_non_null(rs.rows[0].error);
	assert_true(dbcron__utf8_valid(rs.rows[0].error));
	assert_non_null(strstr(rs.rows[0].error, "no live node has registered handler '\xe2\x82\xac"));
	conf_runs_clear(&rs);

	conf_job(&jobs[0], "euro2", now);
	dbcron__free(jobs[0].handler);
	jobs[0].handler = conf_euros(130);
	dbcron_err e = {0};
	assert_int_equal(dbcron_job_validate(&jobs[0], &e), DBCRON_EINVAL);
	assert_non_null(strstr(e.msg, "handler name is 390 bytes long"));
	dbcron_job_clear(&jobs[0]);
}

/* Issue 23 item 1, scalar texts: a logged run whose error and output are
 * not UTF-8 (a lock's command wrote bytes) is written with '?' for the bad
 * bytes on every backend instead of failing the statement. */
static void conf_test_scalar_text_cleaned(void **state)
{
	conf_ctx *c = *state;
	dbcron_run run;
	memset(&run, 0, sizeof(run));
	run.job_name = "lock:bytes";
	run.fire_at = -1;
	run.attempt = 1;
	run.state = DBCRON_RUN_FAILED;
	run.started_ms = conf_now(c);
	run.finished_ms = run.started_ms;
	run.error = "cut \xe2\x82";
	run.output = "a\xff" "b\xe2\x82\xac";
	CONF_OK(c, store_log_run(c->s, &run, &c->err));
	conf_runs rs = {0};
	conf_list(c, "lock:bytes", 0, -1, 0, &rs);
	assert_int_equal(rs.n, 1);
	assert_string_equal(rs.rows[0].error, "cut ??");
	assert_string_equal(rs.rows[0].output, "a?b\xe2\x82\xac");
	conf_runs_clear(&rs);
}

/* An admin edit (job set: read, change retries, put) whose write is held
 * back by a stall on JOBS_UPDATE, on its own connection and thread; each
 * one adds a retry. */
typedef struct conf_slow_edit {
	store *s;
	const char *name;
	int rc;
	dbcron_err err;
} conf_slow_edit;

static void *conf_slow_edit_main(void *arg)
{
	conf_slow_edit *e = arg;
	dbcron_job j;
	dbcron_job_init(&j);
	size_t cr, up, del;
	e->rc = store_job_get(e->s, e->name, &j, &e->err);
	if (!e->rc) {
		j.max_retries++; /* a change, so the put writes the row */
		e->rc = store_job_put(e->s, &j, 1, STORE_PUT_UPSERT, false, &cr, &up, &del, &e->err);
	}
	dbcron_job_clear(&j);
	return NULL;
}

/* Starts the slow edit of name and returns once it has read the job and
 * stalls before its update (the fault seam counts the stall's start). */
static void conf_slow_edit_start(conf_ctx *c, conf_slow_edit *e, pthread_t *t, const char *name)
{
	memset(e, 0, sizeof(*e));
	e->name = name;
	assert_int_equal(store_open(c->url, &e->s, &c->err), DBCRON_OK);
	store_fault f = {.stmt = ST_JOBS_UPDATE, .nth = 1, .times = 1,
			 .kind = STORE_FAULT_STALL, .stall_ms = 1500};
	CONF_OK(c, store_fault_add(e->s, &f, &c->err));
	assert_int_equal(pthread_create(t, NULL, conf_slow_edit_main, e), 0);
	for (int i = 0; i < 3000 && store_fault_hits(e->s) == 0; i++)
		conf_sleep_ms(10);
	if (store_fault_hits(e->s) == 0) {
		pthread_join(*t, NULL);
		fail_msg("the edit never reached its update: rc %d %s", e->rc, e->err.msg);
	}
}

static void conf_slow_edit_join(conf_slow_edit *e, pthread_t t)
{
	pthread_join(t, NULL);
	if (e->rc)
		fail_msg("slow edit: %s", e->err.msg);
	store_close(e->s);
}

/* Issue 23 item 2: an edit that read a job before a concurrent resume,
 * pause or rename committed must not write back what it read.  The race
 * is made certain with the fault seam: the edit has read the row and
 * stalls before its update while the other verb runs.  Fixed, the verb
 * waits for the edit's row lock (PostgreSQL, MariaDB; SQLite's writer
 * lock) and lands after it; before, the edit undid it (a resumed job
 * paused again with no next fire: its series dead; a rename reverted). */
static void conf_test_edit_races(void **state)
{
	conf_ctx *c = *state;
	int64_t now = conf_now(c);
	dbcron_job j;
	conf_job(&j, "edited", -1);
	j.kind = DBCRON_SCHED_AFTER;
	j.paused = true;
	CONF_OK(c, conf_upsert(c, &j, 1));
	dbcron_job_clear(&j);

	/* resume (with its next fire) while the edit stalls */
	conf_slow_edit e;
	pthread_t t;
	int64_t next = now + 3600000;
	conf_slow_edit_start(c, &e, &t, "edited");
	CONF_OK(c, store_job_set_paused(c->s, "edited", false, next, &c->err));
	conf_slow_edit_join(&e, t);
	dbcron_job_init(&j);
	CONF_OK(c, store_job_get(c->s, "edited", &j, &c->err));
	assert_false(j.paused);
	assert_int_equal(j.next_fire_at, next);
	assert_int_equal(j.max_retries, 4);
	dbcron_job_clear(&j);

	/* pause while the edit stalls */
	conf_slow_edit_start(c, &e, &t, "edited");
	CONF_OK(c, store_job_set_paused(c->s, "edited", true, -1, &c->err));
	conf_slow_edit_join(&e, t);
	dbcron_job_init(&j);
	CONF_OK(c, store_job_get(c->s, "edited", &j, &c->err));
	assert_true(j.paused);
	dbcron_job_clear(&j);

	/* rename while the edit stalls: the new name stays, no "edited" */
	conf_slow_edit_start(c, &e, &t, "edited");
	CONF_OK(c, store_job_rename(c->s, "edited", "renamed", &c->err));
	conf_slow_edit_join(&e, t);
	dbcron_job_init(&j);
	CONF_OK(c, store_job_get(c->s, "renamed", &j, &c->err));
	assert_true(j.paused);
	assert_int_equal(j.max_retries, 6); /* and every edit landed */
	dbcron_job_clear(&j);
	dbcron_job_init(&j);
	assert_int_equal(store_job_get(c->s, "edited", &j, &c->err), DBCRON_ENOTFOUND);
	dbcron_job_clear(&j);
}

#define STORE_CONFORMANCE_EDIT_TESTS                                            \
	CONF_T(conf_test_claim_long_handler), CONF_T(conf_test_scalar_text_cleaned),  \
	CONF_T(conf_test_edit_races)

#endif
