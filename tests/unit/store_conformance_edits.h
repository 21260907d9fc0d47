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

#define STORE_CONFORMANCE_EDIT_TESTS CONF_T(conf_test_claim_long_handler)

#endif
