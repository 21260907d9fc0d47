/*
 * Backend-independent tests of the store interface (store.h): every
 * backend must pass all of them.  Include this file from a cmocka test
 * (test_store_sqlite.c, test_store_pg.c) and, before running the group,
 * point the two hooks at your backend:
 *
 *   store_conf_fresh_url    returns the URL of a new, empty database for
 *                           each call (the string stays valid until the
 *                           next call);
 *   store_conf_release_url  (may be NULL) drops what fresh_url made.
 *
 * Then list STORE_CONFORMANCE_TESTS in your CMUnitTest array.  Each test
 * gets its own fresh database, opened and migrated by conf_setup (except
 * the schema tests, which start empty).
 */
#ifndef DBCRON_TEST_STORE_CONFORMANCE_H
#define DBCRON_TEST_STORE_CONFORMANCE_H

#include <pthread.h>
#include <stdlib.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/alloc.h"
#include "dbcron/job.h"
#include "full_job.h"
#include "model/target.h"
#include "store/dialect.h"
#include "store/stmt.h"
#include "store/store.h"

static const char *(*store_conf_fresh_url)(void);
static void (*store_conf_release_url)(const char *url);

typedef struct conf_ctx {
	char url[1024];
	store *s;
	dbcron_err err;
} conf_ctx;

#define CONF_OK(c, call)                                                     \
	do {                                                                 \
		int conf_rc_ = (call);                                       \
		if (conf_rc_ != DBCRON_OK)                                   \
			fail_msg("%s -> %d (%s): %s", #call, conf_rc_,       \
				 dbcron_strerror(conf_rc_), (c)->err.msg);   \
	} while (0)

static int conf_open(conf_ctx *c, store **out)
{
	int rc = store_open(c->url, out, &c->err);
	if (rc)
		print_error("open %s: %s\n", c->url, c->err.msg);
	return rc;
}

static int conf_setup_empty(void **state)
{
	conf_ctx *c = test_calloc(1, sizeof(*c));
	if (!c)
		return -1;
	snprintf(c->url, sizeof(c->url), "%s", store_conf_fresh_url());
	if (conf_open(c, &c->s)) {
		test_free(c);
		return -1;
	}
	*state = c;
	return 0;
}

static int conf_setup(void **state)
{
	if (conf_setup_empty(state))
		return -1;
	conf_ctx *c = *state;
	if (store_migrate(c->s, NULL, NULL, &c->err)) {
		print_error("migrate %s: %s\n", c->url, c->err.msg);
		return -1;
	}
	return 0;
}

static int conf_teardown(void **state)
{
	conf_ctx *c = *state;
	if (!c)
		return 0;
	store_close(c->s);
	if (store_conf_release_url)
		store_conf_release_url(c->url);
	test_free(c);
	return 0;
}

static void conf_sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0)
		;
}

static int64_t conf_now(conf_ctx *c)
{
	int64_t now = 0;
	CONF_OK(c, store_now_ms(c->s, &now, &c->err));
	return now;
}

/* An every-second noop job, first fire at next. */
/* The overlap policy conf_job gives: allow, because most tests claim fires
 * and leave them claimed, which the overlap rule across nodes (issue 28
 * item 2) would hold other nodes' claims back from; conf_test_claim_overlap
 * tests that rule, and the concurrent claimers run under skip. */
static dbcron_overlap conf_overlap = DBCRON_OVERLAP_ALLOW;

static void conf_job(dbcron_job *j, const char *name, int64_t next)
{
	dbcron_job_init(j);
	j->overlap = conf_overlap;
	j->name = dbcron__strdup(name);
	j->kind = DBCRON_SCHED_EVERY;
	j->spec = dbcron__strdup("1s");
	j->interval_ms = 1000;
	j->executor = DBCRON_EXEC_HANDLER;
	j->handler = dbcron__strdup("noop");
	j->next_fire_at = next;
	assert_non_null(j->name);
}

/* Upsert n jobs in one call, the counts dropped: most tests need only
 * the rows. */
static int conf_upsert(conf_ctx *c, dbcron_job *jobs, size_t n)
{
	size_t cr, up, del;
	return store_job_put(c->s, jobs, n, STORE_PUT_UPSERT, false, &cr, &up, &del, &c->err);
}

static void conf_put(conf_ctx *c, int n, const char *prefix, int64_t next)
{
	dbcron_job *jobs = test_calloc((size_t)n, sizeof(*jobs));
	char name[64];
	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "%s%04d", prefix, i);
		conf_job(&jobs[i], name, next);
	}
	CONF_OK(c, conf_upsert(c, jobs, (size_t)n));
	for (int i = 0; i < n; i++)
		dbcron_job_clear(&jobs[i]);
	test_free(jobs);
}

/* The trivial planner: one SCHEDULED fire at next_fire_at, next = +1 s,
 * none after `stop` (when stop >= 0). */
typedef struct conf_planner {
	store_fire fire;
	int64_t stop;
	int calls;
	const char *fail; /* a job name the planner cannot plan */
	int nfires;       /* > 1: that many fires 1 ms apart (catch-up) */
	store_fire many[16];
	int64_t step; /* ms to the next fire; 0 is 1000 */
	bool misfire; /* the one fire ended MISFIRED (a skip policy's late fire) */
} conf_planner;

static int conf_plan(void *ctx, const dbcron_job *job, int64_t now_ms,
		     int64_t horizon_ms, store_plan *out)
{
	conf_planner *p = ctx;
	(void)now_ms;
	(void)horizon_ms;
	p->calls++;
	if (p->fail && strcmp(job->name, p->fail) == 0) {
		out->error = "zone 'Nowhere/Atlantis' not found";
		return DBCRON_EINVAL;
	}
	if (p->nfires > 1) {
		for (int i = 0; i < p->nfires && i < 16; i++)
			p->many[i] = (store_fire){.fire_at = job->next_fire_at + i,
						  .due_at = job->next_fire_at + i,
						  .state = DBCRON_RUN_SCHEDULED};
		out->fires = p->many;
		out->nfires = (size_t)(p->nfires < 16 ? p->nfires : 16);
		out->next_fire_at = job->next_fire_at + 60000;
		return DBCRON_OK;
	}
	memset(&p->fire, 0, sizeof(p->fire));
	p->fire.fire_at = job->next_fire_at;
	p->fire.due_at = job->next_fire_at;
	p->fire.state = p->misfire ? DBCRON_RUN_MISFIRED : DBCRON_RUN_SCHEDULED;
	out->fires = &p->fire;
	out->nfires = 1;
	out->next_fire_at = job->next_fire_at + (p->step ? p->step : 1000);
	if (p->stop >= 0 && out->next_fire_at > p->stop)
		out->next_fire_at = -1;
	return DBCRON_OK;
}

static int conf_claim(conf_ctx *c, store *s, const char *node, const char *token,
		      int max, conf_planner *p, store_claim_result *out)
{
	store_claim_req req = {
		.node_id = node, .token = token, .horizon_ms_ahead = 0,
		.max = max, .plan = conf_plan, .plan_ctx = p,
	};
	return store_claim(s, &req, out, &c->err);
}

static store_update conf_update(const store_claimed *cl, dbcron_run_state st)
{
	store_update u;
	memset(&u, 0, sizeof(u));
	u.run_id = cl->run.id;
	u.job_id = cl->run.job_id;
	u.fire_at = cl->run.fire_at;
	u.attempt = cl->run.attempt;
	u.token = cl->run.claim_token;
	u.state = st;
	u.started_ms = u.finished_ms = -1;
	u.retry_due_at = -1;
	u.job_next_fire_at = -1;
	return u;
}

/* Collect runs of a listing. */
typedef struct conf_runs {
	dbcron_run rows[64];
	int n;
} conf_runs;

static int conf_run_cb(void *ctx, const dbcron_run *r)
{
	conf_runs *rs = ctx;
	if (rs->n >= 64)
		return 1;
	dbcron_run *d = &rs->rows[rs->n++];
	*d = *r;
	d->job_name = r->job_name ? dbcron__strdup(r->job_name) : NULL;
	d->node = r->node ? dbcron__strdup(r->node) : NULL;
	d->claim_token = r->claim_token ? dbcron__strdup(r->claim_token) : NULL;
	d->error = r->error ? dbcron__strdup(r->error) : NULL;
	d->output = r->output ? dbcron__strdup(r->output) : NULL;
	d->params = r->params ? dbcron__strdup(r->params) : NULL;
	d->for_node = r->for_node ? dbcron__strdup(r->for_node) : NULL;
	return 0;
}

static void conf_runs_clear(conf_runs *rs)
{
	for (int i = 0; i < rs->n; i++)
		dbcron_run_clear(&rs->rows[i]);
	rs->n = 0;
}

static void conf_list(conf_ctx *c, const char *job, int state, int64_t since,
		      long limit, conf_runs *out)
{
	store_run_filter f = {.job = job, .state = state, .since_ms = since, .limit = limit};
	conf_runs_clear(out);
	CONF_OK(c, store_runs_list(c->s, &f, conf_run_cb, out, &c->err));
}

/* ---- schema ---- */

static void conf_test_migrate(void **state)
{
	conf_ctx *c = *state;
	int from = -1, to = -1;
	CONF_OK(c, store_migrate(c->s, &from, &to, &c->err));
	assert_int_equal(from, 0);
	assert_true(to >= 1);
	int v = to;
	CONF_OK(c, store_migrate(c->s, &from, &to, &c->err));
	assert_int_equal(from, v);
	assert_int_equal(to, v);
	CONF_OK(c, store_check_schema(c->s, &c->err));
}

static void conf_test_check_schema_empty(void **state)
{
	conf_ctx *c = *state;
	assert_int_equal(store_check_schema(c->s, &c->err), DBCRON_ESCHEMA);
	assert_non_null(strstr(c->err.msg, "no dbcron schema"));
	assert_non_null(strstr(c->err.msg, "dbcron init"));
}

static void conf_test_open_bad_url(void **state)
{
	(void)state;
	store *s = (store *)1;
	dbcron_err err = {0};
	assert_int_equal(store_open("oracle://u:secret@h/db", &s, &err), DBCRON_EINVAL);
	assert_null(s);
	assert_non_null(strstr(err.msg, "unsupported database URL"));
	assert_null(strstr(err.msg, "secret"));
}

/* ---- jobs ---- */

static void conf_test_job_put(void **state)
{
	conf_ctx *c = *state;
	dbcron_job jobs[3], got;
	size_t cr = 9, up = 9, del = 9;

	conf_job(&jobs[0], "a", 1000);
	conf_job(&jobs[1], "b", 2000);
	CONF_OK(c, store_job_put(c->s, jobs, 2, STORE_PUT_CREATE, false, &cr, &up, &del, &c->err));
	assert_int_equal(cr, 2);
	assert_int_equal(up, 0);
	assert_true(jobs[0].id > 0);

	/* A duplicate name in CREATE mode: nothing of the batch is written. */
	conf_job(&jobs[2], "c", 3000);
	dbcron_job batch[2] = {jobs[2], jobs[1]};
	assert_int_equal(store_job_put(c->s, batch, 2, STORE_PUT_CREATE, false, &cr, &up,
				    &del, &c->err),
			 DBCRON_EEXISTS);
	assert_non_null(strstr(c->err.msg, "'b'"));
	assert_int_equal(store_job_get(c->s, "c", &got, &c->err), DBCRON_ENOTFOUND);
	assert_non_null(strstr(c->err.msg, "no job named 'c'"));
	dbcron_job_clear(&got);

	/* Upsert with an unchanged schedule keeps next_fire_at; a changed one
	 * takes the caller's. */
	jobs[0].next_fire_at = 99999;
	jobs[0].max_retries = 7;
	dbcron__free(jobs[1].spec);
	jobs[1].spec = dbcron__strdup("2s");
	jobs[1].interval_ms = 2000;
	jobs[1].next_fire_at = 88888;
	CONF_OK(c, store_job_put(c->s, jobs, 2, STORE_PUT_UPSERT, false, &cr, &up, &del, &c->err));
	assert_int_equal(cr, 0);
	assert_int_equal(up, 2);
	CONF_OK(c, store_job_get(c->s, "a", &got, &c->err));
	assert_int_equal(got.next_fire_at, 1000);
	assert_int_equal(got.max_retries, 7);
	assert_string_equal(got.handler, "noop");
	assert_int_equal(got.kind, DBCRON_SCHED_EVERY);
	dbcron_job_clear(&got);
	CONF_OK(c, store_job_get(c->s, "b", &got, &c->err));
	assert_int_equal(got.next_fire_at, 88888);
	assert_string_equal(got.spec, "2s");
	dbcron_job_clear(&got);

	/* Shell argv round trip, with characters JSON must escape. */
	dbcron_job sh;
	conf_job(&sh, "sh", -1);
	sh.executor = DBCRON_EXEC_SHELL;
	dbcron__free(sh.handler);
	sh.handler = NULL;
	sh.argc = 3;
	sh.argv = dbcron__calloc(4, sizeof(char *));
	sh.argv[0] = dbcron__strdup("/bin/echo");
	sh.argv[1] = dbcron__strdup("a \"quoted\"\\ arg\n");
	sh.argv[2] = dbcron__strdup("\xc3\xa9t\xc3\xa9");
	CONF_OK(c, conf_upsert(c, &sh, 1));
	CONF_OK(c, store_job_get(c->s, "sh", &got, &c->err));
	assert_int_equal(got.argc, 3);
	assert_string_equal(got.argv[1], "a \"quoted\"\\ arg\n");
	assert_string_equal(got.argv[2], "\xc3\xa9t\xc3\xa9");
	assert_null(got.argv[3]);
	assert_int_equal(got.next_fire_at, -1);
	dbcron_job_clear(&got);
	dbcron_job_clear(&sh);

	/* Prune: only "a" and "c" remain. */
	dbcron_job keep[2] = {jobs[0], jobs[2]};
	CONF_OK(c, store_job_put(c->s, keep, 2, STORE_PUT_UPSERT, true, &cr, &up, &del, &c->err));
	assert_int_equal(cr, 1);
	assert_int_equal(up, 1);
	assert_int_equal(del, 2);
	assert_int_equal(store_job_get(c->s, "b", &got, &c->err), DBCRON_ENOTFOUND);
	dbcron_job_clear(&got);
	for (int i = 0; i < 3; i++)
		dbcron_job_clear(&jobs[i]);
}

/* model_diff_fn: the members that differ, "a,b,". */
static void conf_diff_into(void *ctx, const model_field *f, model_jobdef_id key)
{
	(void)key;
	strcat(ctx, f->member);
	strcat(ctx, ",");
}

/* Every field of the field table survives the store (a command, a
 * handler and a SQL job, each field away from its default: full_job.h), written by
 * an insert and again by an update; the same again is not rewritten. */
static void conf_test_job_fields(void **state)
{
	conf_ctx *c = *state;
	assert_null(full_job_covers(MODEL_ROLE_NAME | MODEL_ROLE_DEF | MODEL_ROLE_STATE |
				    MODEL_ROLE_PLACE));
	static const char *const names[] = {"fields-c", "fields-h", "fields-x", "fields-s"};
	for (int h = 0; h < FULL_KINDS; h++) {
		dbcron_job j, got;
		char diff[1024] = "";
		full_job(&j, names[h], h);
		for (int pass = 0; pass < 2; pass++) {
			/* pass 1 updates the row pass 0 inserted */
			j.max_retries += pass;
			CONF_OK(c, conf_upsert(c, &j, 1));
			CONF_OK(c, store_job_get(c->s, j.name, &got, &c->err));
			unsigned roles = MODEL_ROLE_NAME | MODEL_ROLE_DEF | MODEL_ROLE_STATE |
					 MODEL_ROLE_PLACE;
			if (model_job_diff(&j, &got, roles, conf_diff_into, diff))
				fail_msg("%s job, %s: read back differs in %s", names[h],
					 pass ? "update" : "insert", diff);
			assert_true(got.created_ms > 0 && got.updated_ms >= got.created_ms);
			dbcron_job_clear(&got);
		}
		dbcron_job_clear(&j);
	}
}

/* H's and --spread's seed (spread_seed) keeps every value of a signed
 * 64-bit column, the largest included, and "none" (-1, NULL) stays none:
 * a seed cut to 32 bits or read back as 0 would move a job's fires. */
static void conf_test_job_spread_seed(void **state)
{
	conf_ctx *c = *state;
	static const int64_t seeds[] = {INT64_MAX, 0, 4294967297LL, -1};
	for (size_t i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++) {
		dbcron_job j, got;
		full_job(&j, "seeded", false);
		j.spread_seed = seeds[i];
		j.spread_ms = i == 1 ? 0 : 90000;
		CONF_OK(c, conf_upsert(c, &j, 1));
		CONF_OK(c, store_job_get(c->s, j.name, &got, &c->err));
		assert_int_equal(got.spread_seed, seeds[i]);
		assert_int_equal(got.spread_ms, j.spread_ms);
		assert_int_equal(got.start_jitter_ms, 5000);
		dbcron_job_clear(&got);
		dbcron_job_clear(&j);
	}
}

/* What a shell job runs as survives the store, and a change to any of it
 * is a change of the definition (an unchanged one is not rewritten). */
static void conf_test_job_runas(void **state)
{
	conf_ctx *c = *state;
	dbcron_job j, got;

	conf_job(&j, "ra", -1);
	j.executor = DBCRON_EXEC_SHELL;
	dbcron__free(j.handler);
	j.handler = NULL;
	j.argc = 1;
	j.argv = dbcron__calloc(2, sizeof(char *));
	j.argv[0] = dbcron__strdup("true");
	j.user = dbcron__strdup("nobody");
	j.group = dbcron__strdup("nogroup");
	j.cwd = dbcron__strdup("/srv/ra");
	j.env_file = dbcron__strdup("/etc/dbcron/ra.env");
	j.umask = 027;
	j.inherit_env = true;
	j.envc = 2;
	j.env = dbcron__calloc(3, sizeof(char *));
	j.env[0] = dbcron__strdup("A=1");
	j.env[1] = dbcron__strdup("B=\"q\" \xc3\xa9=x");
	CONF_OK(c, conf_upsert(c, &j, 1));
	CONF_OK(c, store_job_get(c->s, "ra", &got, &c->err));
	assert_string_equal(got.user, "nobody");
	assert_string_equal(got.group, "nogroup");
	assert_string_equal(got.cwd, "/srv/ra");
	assert_string_equal(got.env_file, "/etc/dbcron/ra.env");
	assert_int_equal(got.umask, 027);
	assert_true(got.inherit_env);
	assert_int_equal(got.envc, 2);
	assert_string_equal(got.env[1], "B=\"q\" \xc3\xa9=x");
	assert_null(got.env[2]);
	int64_t updated = got.updated_ms;
	dbcron_job_clear(&got);

	/* the same again: not rewritten */
	conf_sleep_ms(5);
	CONF_OK(c, conf_upsert(c, &j, 1));
	CONF_OK(c, store_job_get(c->s, "ra", &got, &c->err));
	assert_int_equal(got.updated_ms, updated);
	dbcron_job_clear(&got);

	/* each field changed alone is a change that is written */
	for (int step = 0; step < 7; step++) {
		char **slot = step == 0 ? &j.user : step == 1 ? &j.group : step == 2 ? &j.cwd
			    : step == 3 ? &j.env_file : step == 4 ? &j.env[0] : NULL;
		if (slot) {
			dbcron__free(*slot);
			*slot = step == 4 ? dbcron__strdup("A=2") : step == 2 ? NULL
			      : dbcron__strdup(step == 3 ? "/etc/dbcron/other.env" : "daemon");
		} else if (step == 5) {
			j.umask = -1;
		} else {
			j.inherit_env = false;
		}
		CONF_OK(c, conf_upsert(c, &j, 1));
		CONF_OK(c, store_job_get(c->s, "ra", &got, &c->err));
		if (step == 0)
			assert_string_equal(got.user, "daemon");
		else if (step == 1)
			assert_string_equal(got.group, "daemon");
		else if (step == 2)
			assert_null(got.cwd);
		else if (step == 3)
			assert_string_equal(got.env_file, "/etc/dbcron/other.env");
		else if (step == 4)
			assert_string_equal(got.env[0], "A=2");
		else if (step == 5)
			assert_int_equal(got.umask, -1);
		else
			assert_false(got.inherit_env);
		dbcron_job_clear(&got);
	}

	/* none of it set: reads back unset */
	dbcron_job none;
	conf_job(&none, "rb", -1);
	CONF_OK(c, conf_upsert(c, &none, 1));
	CONF_OK(c, store_job_get(c->s, "rb", &got, &c->err));
	assert_null(got.user);
	assert_null(got.cwd);
	assert_null(got.env);
	assert_int_equal(got.envc, 0);
	assert_int_equal(got.umask, -1);
	assert_false(got.inherit_env);
	dbcron_job_clear(&got);
	dbcron_job_clear(&none);

	/* a value that is not UTF-8 is refused on write, naming it */
	dbcron__free(j.env[1]);
	j.env[1] = dbcron__strdup("B=\xff");
	assert_int_equal(conf_upsert(c, &j, 1), DBCRON_EINVAL);
	assert_string_equal(c->err.msg, "job 'ra': env variable 2 is not valid UTF-8");
	dbcron_job_clear(&j);
}

static int conf_count_job(void *ctx, const dbcron_job *job)
{
	(void)job;
	(*(int *)ctx)++;
	return 0;
}

static void conf_test_job_ops(void **state)
{
	conf_ctx *c = *state;
	dbcron_job got;
	int64_t now = conf_now(c);
	conf_put(c, 3, "j", now + 60000);

	int n = 0;
	CONF_OK(c, store_job_list(c->s, conf_count_job, &n, &c->err));
	assert_int_equal(n, 3);

	CONF_OK(c, store_job_set_paused(c->s, "j0000", true, -1, &c->err));
	CONF_OK(c, store_job_get(c->s, "j0000", &got, &c->err));
	assert_true(got.paused);
	assert_int_equal(got.next_fire_at, now + 60000);
	dbcron_job_clear(&got);
	CONF_OK(c, store_job_set_paused(c->s, "j0000", false, now + 5000, &c->err));
	CONF_OK(c, store_job_get(c->s, "j0000", &got, &c->err));
	assert_false(got.paused);
	assert_int_equal(got.next_fire_at, now + 5000);
	dbcron_job_clear(&got);
	assert_int_equal(store_job_set_paused(c->s, "nope", true, -1, &c->err), DBCRON_ENOTFOUND);
	assert_non_null(strstr(c->err.msg, "'nope'"));

	/* Trigger twice: two unclaimed attempt-1 runs, distinct fire_at. */
	int64_t id1, id2, f1, f2;
	CONF_OK(c, store_job_trigger(c->s, "j0001", &id1, &f1, &c->err));
	CONF_OK(c, store_job_trigger(c->s, "j0001", &id2, &f2, &c->err));
	assert_true(id1 != id2);
	assert_true(f1 != f2);
	assert_int_equal(store_job_trigger(c->s, "nope", &id1, &f1, &c->err), DBCRON_ENOTFOUND);
	conf_runs rs = {0};
	conf_list(c, "j0001", 0, -1, 0, &rs);
	assert_int_equal(rs.n, 2);
	assert_int_equal(rs.rows[0].state, DBCRON_RUN_SCHEDULED);
	assert_int_equal(rs.rows[0].attempt, 1);
	assert_null(rs.rows[0].node);

	/* A triggered run is claimed by anyone, from the unclaimed pool (a
	 * bumped trigger may be due 1 ms ahead: let the clock pass it). */
	conf_sleep_ms(5);
	conf_planner p = {.stop = -1};
	store_claim_result r;
	CONF_OK(c, conf_claim(c, c->s, "n1", "t1", 10, &p, &r));
	assert_int_equal(r.nruns, 2);
	assert_int_equal(p.calls, 0);
	assert_string_equal(r.runs[0].job->name, "j0001");
	assert_string_equal(r.runs[0].run.node, "n1");
	store_claim_result_clear(&r);

	/* Delete keeps the runs. */
	CONF_OK(c, store_job_delete(c->s, "j0001", &c->err));
	assert_int_equal(store_job_delete(c->s, "j0001", &c->err), DBCRON_ENOTFOUND);
	conf_list(c, "j0001", 0, -1, 0, &rs);
	assert_int_equal(rs.n, 2);
	conf_runs_clear(&rs);
}

/* ---- the claim ---- */

/* A claim as conf_claim, routed: handler jobs only for the names given. */
static int conf_claim_routed(conf_ctx *c, const char *node, const char *token,
			     const char *const *handlers, size_t nhandlers, conf_planner *p,
			     store_claim_result *out)
{
	store_claim_req req = {
		.node_id = node, .token = token, .horizon_ms_ahead = 0,
		.max = 100, .plan = conf_plan, .plan_ctx = p,
		.handlers = handlers, .nhandlers = nhandlers,
	};
	return store_claim(c->s, &req, out, &c->err);
}

/* Routing (issue 15): a node that lacks a job's handler claims neither its
 * due fires nor its unclaimed runs; one that has it claims both; commands
 * go to anyone. */
static void conf_test_claim_routing(void **state)
{
	conf_ctx *c = *state;
	int64_t now = conf_now(c);
	dbcron_job jobs[2];
	conf_job(&jobs[0], "noop-job", now - 500);
	conf_job(&jobs[1], "cmd-job", now - 500);
	dbcron__free(jobs[1].handler);
	jobs[1].handler = NULL;
	jobs[1].executor = DBCRON_EXEC_SHELL;
	jobs[1].argv = dbcron__calloc(2, sizeof(char *));
	assert_non_null(jobs[1].argv);
	jobs[1].argv[0] = dbcron__strdup("true");
	jobs[1].argc = 1;
	CONF_OK(c, conf_upsert(c, jobs, 2));
	for (int i = 0; i < 2; i++)
		dbcron_job_clear(&jobs[i]);
	int64_t run_id, fire_at;
	CONF_OK(c, store_job_trigger(c->s, "noop-job", &run_id, &fire_at, &c->err));
	conf_sleep_ms(5);

	/* "sleep" only: the command's fire, nothing of noop-job (next fires
	 * a minute on, out of reach of the later claims however slow) */
	static const char *const sleep_only[] = {"sleep"};
	conf_planner p = {.stop = -1, .step = 60000};
	store_claim_result r;
	CONF_OK(c, conf_claim_routed(c, "n-sleep", "t1", sleep_only, 1, &p, &r));
	assert_int_equal(r.nruns, 1);
	assert_string_equal(r.runs[0].run.job_name, "cmd-job");
	store_claim_result_clear(&r);
	/* an empty list: still no handler job */
	CONF_OK(c, conf_claim_routed(c, "n-none", "t2", sleep_only, 0, &p, &r));
	assert_int_equal(r.nruns, 0);
	store_claim_result_clear(&r);

	/* with "noop": its due fire and its triggered run */
	static const char *const both[] = {"sleep", "noop"};
	CONF_OK(c, conf_claim_routed(c, "n-noop", "t3", both, 2, &p, &r));
	assert_int_equal(r.nruns, 2);
	bool due = false, triggered = false;
	for (size_t i = 0; i < r.nruns; i++) {
		assert_string_equal(r.runs[i].run.job_name, "noop-job");
		assert_string_equal(r.runs[i].run.node, "n-noop");
		due |= r.runs[i].run.fire_at == now - 500;
		triggered |= r.runs[i].run.id == run_id;
	}
	assert_true(due && triggered);
	store_claim_result_clear(&r);
}

/* Routing's misfire: a handler job past its misfire threshold whose
 * handler no live node registered is claimed by a node without it, which
 * records the fire MISFIRED with the reason; with a live node that has
 * the handler, the job waits for that node instead. */
static void conf_test_claim_stranded(void **state)
{
	conf_ctx *c = *state;
	int64_t now = conf_now(c);
	dbcron_job j;
	conf_job(&j, "stray", now - 5000);
	j.misfire_threshold_ms = 1000;
	CONF_OK(c, conf_upsert(c, &j, 1));
	dbcron_job_clear(&j);

	static const char *const sleep_only[] = {"sleep"};
	conf_planner p = {.stop = -1};
	store_claim_result r;
	CONF_OK(c, conf_claim_routed(c, "n-sleep", "t1", sleep_only, 1, &p, &r));
	assert_int_equal(r.nruns, 0);
	assert_true(r.nterminal >= 1);
	store_claim_result_clear(&r);
	conf_runs rs = {0};
	conf_list(c, "stray", 0, -1, 0, &rs);
	assert_true(rs.n >= 1);
	for (int i = 0; i < rs.n; i++) {
		assert_int_equal(rs.rows[i].state, DBCRON_RUN_MISFIRED);
		assert_string_equal(rs.rows[i].error, "no live node has registered handler 'noop'");
	}
	conf_runs_clear(&rs);

	/* a live node that registered noop: the job waits for it */
	static const char *const has_noop[] = {"noop"};
	store_node_info ni = {.node_id = "n-noop", .incarnation = "inc", .host = "h", .pid = 1,
			      .workers = 1, .lease_ms = 600000, .handlers = has_noop,
			      .nhandlers = 1};
	CONF_OK(c, store_node_register(c->s, &ni, &c->err));
	conf_job(&j, "waits", now - 5000);
	j.misfire_threshold_ms = 1000;
	CONF_OK(c, conf_upsert(c, &j, 1));
	dbcron_job_clear(&j);
	CONF_OK(c, conf_claim_routed(c, "n-sleep", "t2", sleep_only, 1, &p, &r));
	for (size_t i = 0; i < r.nruns; i++)
		assert_string_not_equal(r.runs[i].run.job_name, "waits");
	store_claim_result_clear(&r);
	conf_list(c, "waits", 0, -1, 0, &rs);
	assert_int_equal(rs.n, 0);
	conf_runs_clear(&rs);
}

/* Routing's misfire of an AFTER job's own fire: the MISFIRED record is the
 * end its next fire counts from, so the series goes on (issue 23 item 3:
 * next_fire_at stayed NULL for good, even after a node with the handler
 * joined). */
static void conf_test_claim_stranded_after(void **state)
{
	conf_ctx *c = *state;
	int64_t now = conf_now(c);
	dbcron_job j;
	conf_job(&j, "after-stray", now - 5000);
	j.kind = DBCRON_SCHED_AFTER;
	j.misfire_threshold_ms = 1000;
	CONF_OK(c, conf_upsert(c, &j, 1));
	dbcron_job_clear(&j);

	static const char *const sleep_only[] = {"sleep"};
	/* as the real planner plans an AFTER job: one fire, then none */
	conf_planner p = {.stop = 0};
	store_claim_result r;
	CONF_OK(c, conf_claim_routed(c, "n-sleep", "t1", sleep_only, 1, &p, &r));
	assert_int_equal(r.nruns, 0);
	assert_int_equal(r.nterminal, 1);
	int64_t ended_at = r.now_ms;
	store_claim_result_clear(&r);
	conf_runs rs = {0};
	conf_list(c, "after-stray", 0, -1, 0, &rs);
	assert_int_equal(rs.n, 1);
	assert_int_equal(rs.rows[0].state, DBCRON_RUN_MISFIRED);
	conf_runs_clear(&rs);
	dbcron_job got;
	CONF_OK(c, store_job_get(c->s, "after-stray", &got, &c->err));
	assert_int_equal(got.next_fire_at, ended_at + 1000);
	dbcron_job_clear(&got);
}

/* Routing's misfire for runs: a triggered run and a retry of a handler job
 * that no live node can run wait unclaimed until they are due past the
 * job's misfire threshold; then the first claim of any node takes them and
 * ends them MISFIRED with the reason under its own token, once (a second
 * node finds nothing); an AFTER job's series goes on from there.  With a
 * live node that has the handler, they wait for it. */
/* The two jobs of conf_test_claim_stranded_runs, with a misfire threshold. */
static void conf_stranded_jobs(conf_ctx *c, int64_t now, int64_t threshold_ms)
{
	dbcron_job jobs[2];
	conf_job(&jobs[0], "lost", now + 3600000);
	conf_job(&jobs[1], "lost-after", -1);
	jobs[1].kind = DBCRON_SCHED_AFTER;
	for (int i = 0; i < 2; i++) {
		dbcron__free(jobs[i].handler);
		jobs[i].handler = dbcron__strdup("x-none");
		jobs[i].misfire_threshold_ms = threshold_ms;
	}
	CONF_OK(c, conf_upsert(c, jobs, 2));
	for (int i = 0; i < 2; i++)
		dbcron_job_clear(&jobs[i]);
}

static void conf_test_claim_stranded_runs(void **state)
{
	conf_ctx *c = *state;
	int64_t now = conf_now(c);
	/* a threshold no slow machine reaches while "within" is checked; it
	 * is cut to a millisecond for "past it" */
	conf_stranded_jobs(c, now, 600000);

	/* attempt 1 of a triggered run fails where x-none was, and is owed a
	 * retry due now: attempt 2, unclaimed */
	int64_t id, fire_at;
	CONF_OK(c, store_job_trigger(c->s, "lost", &id, &fire_at, &c->err));
	conf_sleep_ms(5);
	static const char *const has_x[] = {"x-none"};
	conf_planner p = {.stop = -1};
	store_claim_result r;
	CONF_OK(c, conf_claim_routed(c, "n-x", "t0", has_x, 1, &p, &r));
	assert_int_equal(r.nruns, 1);
	store_update u = conf_update(&r.runs[0], DBCRON_RUN_FAILED);
	u.finished_ms = r.now_ms;
	u.retry_due_at = r.now_ms;
	CONF_OK(c, store_apply(c->s, "n-x", &u, 1, &c->err));
	store_claim_result_clear(&r);
	/* and a second trigger, plus one of the AFTER job */
	CONF_OK(c, store_job_trigger(c->s, "lost", &id, &fire_at, &c->err));
	CONF_OK(c, store_job_trigger(c->s, "lost-after", &id, &fire_at, &c->err));
	conf_sleep_ms(5);

	/* within the threshold they wait */
	static const char *const sleep_only[] = {"sleep"};
	CONF_OK(c, conf_claim_routed(c, "n-a", "ta1", sleep_only, 1, &p, &r));
	assert_int_equal(r.nruns, 0);
	assert_int_equal(r.nterminal, 0);
	store_claim_result_clear(&r);
	conf_runs rs = {0};
	conf_list(c, "lost", DBCRON_RUN_SCHEDULED, -1, 0, &rs);
	assert_int_equal(rs.n, 2);
	for (int i = 0; i < rs.n; i++)
		assert_null(rs.rows[i].node);

	/* past it: n-a takes all three and ends them; n-b finds nothing */
	conf_stranded_jobs(c, now, 1);
	conf_sleep_ms(5);
	CONF_OK(c, conf_claim_routed(c, "n-a", "ta2", sleep_only, 1, &p, &r));
	assert_int_equal(r.nruns, 0);
	assert_int_equal(r.nterminal, 3);
	int64_t ended_at = r.now_ms;
	store_claim_result_clear(&r);
	store *other;
	assert_int_equal(conf_open(c, &other), DBCRON_OK);
	store_claim_req req = {.node_id = "n-b", .token = "tb", .max = 100, .plan = conf_plan,
			       .plan_ctx = &p, .handlers = sleep_only, .nhandlers = 1};
	CONF_OK(c, store_claim(other, &req, &r, &c->err));
	assert_int_equal(r.nruns, 0);
	assert_int_equal(r.nterminal, 0);
	store_claim_result_clear(&r);
	store_close(other);
	const char *lost_job[] = {"lost", "lost-after"};
	int misfired = 0;
	for (int k = 0; k < 2; k++) {
		conf_list(c, lost_job[k], 0, -1, 0, &rs);
		for (int i = 0; i < rs.n; i++) {
			if (rs.rows[i].state == DBCRON_RUN_FAILED) {
				assert_int_equal(rs.rows[i].attempt, 1);
				continue;
			}
			assert_int_equal(rs.rows[i].state, DBCRON_RUN_MISFIRED);
			assert_string_equal(rs.rows[i].error,
					    "no live node has registered handler 'x-none'");
			assert_string_equal(rs.rows[i].node, "n-a");
			assert_string_equal(rs.rows[i].claim_token, "ta2");
			assert_int_equal(rs.rows[i].finished_ms, ended_at);
			misfired++;
		}
	}
	assert_int_equal(misfired, 3);
	conf_list(c, "lost", DBCRON_RUN_MISFIRED, -1, 0, &rs);
	bool retry = false;
	for (int i = 0; i < rs.n; i++)
		retry |= rs.rows[i].attempt == 2;
	assert_true(retry);
	conf_runs_clear(&rs);
	dbcron_job got;
	CONF_OK(c, store_job_get(c->s, "lost-after", &got, &c->err));
	assert_int_equal(got.next_fire_at, ended_at + 1000);
	dbcron_job_clear(&got);

	/* a live node that registered x-none: a stranded-looking run waits */
	store_node_info ni = {.node_id = "n-x", .incarnation = "inc", .host = "h", .pid = 1,
			      .workers = 1, .lease_ms = 600000, .handlers = has_x, .nhandlers = 1};
	CONF_OK(c, store_node_register(c->s, &ni, &c->err));
	CONF_OK(c, store_job_trigger(c->s, "lost", &id, &fire_at, &c->err));
	conf_sleep_ms(5); /* past the threshold of 1 ms */
	CONF_OK(c, conf_claim_routed(c, "n-a", "ta3", sleep_only, 1, &p, &r));
	assert_int_equal(r.nruns, 0);
	assert_int_equal(r.nterminal, 0);
	store_claim_result_clear(&r);
	dbcron_run run;
	CONF_OK(c, store_run_get(c->s, id, &run, &c->err));
	assert_int_equal(run.state, DBCRON_RUN_SCHEDULED);
	assert_null(run.node);
	dbcron_run_clear(&run);
}

typedef struct conf_stranded_claimer {
	conf_ctx *c;
	const char *node;
	store *s;
	size_t ended; /* MISFIRED rows its claims wrote */
	int rc;
	dbcron_err err;
} conf_stranded_claimer;

/* Claims of at most 3 until three in a row end nothing. */
static void *conf_stranded_claim_loop(void *arg)
{
	conf_stranded_claimer *k = arg;
	static const char *const sleep_only[] = {"sleep"};
	conf_planner p = {.stop = -1};
	char token[64];
	for (int i = 0, idle = 0; idle < 3 && i < 1000; i++) {
		snprintf(token, sizeof(token), "%s-%d", k->node, i);
		store_claim_req req = {.node_id = k->node, .token = token, .max = 3,
				       .plan = conf_plan, .plan_ctx = &p, .handlers = sleep_only,
				       .nhandlers = 1};
		store_claim_result r;
		if ((k->rc = store_claim(k->s, &req, &r, &k->err)))
			return NULL;
		k->ended += r.nterminal;
		idle = r.nterminal ? 0 : idle + 1;
		if (r.nruns)
			k->rc = DBCRON_EINTERNAL; /* a stranded run handed out */
		store_claim_result_clear(&r);
		if (k->rc)
			return NULL;
	}
	return NULL;
}

/* Stranded runs claimed by two nodes at once: each ends MISFIRED exactly
 * once, by the one claim that took it. */
static void conf_test_claim_stranded_race(void **state)
{
	conf_ctx *c = *state;
	int64_t now = conf_now(c);
	dbcron_job j;
	conf_job(&j, "lost", now + 3600000);
	dbcron__free(j.handler);
	j.handler = dbcron__strdup("x-none");
	j.misfire_threshold_ms = 100;
	CONF_OK(c, conf_upsert(c, &j, 1));
	dbcron_job_clear(&j);
	for (int i = 0; i < 20; i++) {
		int64_t id, fire_at;
		CONF_OK(c, store_job_trigger(c->s, "lost", &id, &fire_at, &c->err));
	}
	conf_sleep_ms(300);
	conf_stranded_claimer k[2] = {{.c = c, .node = "n-a"}, {.c = c, .node = "n-b"}};
	pthread_t th[2];
	for (int i = 0; i < 2; i++)
		assert_int_equal(conf_open(c, &k[i].s), 0);
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&th[i], NULL, conf_stranded_claim_loop, &k[i]), 0);
	for (int i = 0; i < 2; i++) {
		pthread_join(th[i], NULL);
		store_close(k[i].s);
		if (k[i].rc)
			fail_msg("%s: %d %s", k[i].node, k[i].rc, k[i].err.msg);
	}
	assert_int_equal(k[0].ended + k[1].ended, 20);
	conf_runs rs = {0};
	conf_list(c, "lost", 0, -1, 0, &rs);
	assert_int_equal(rs.n, 20);
	for (int i = 0; i < rs.n; i++) {
		assert_int_equal(rs.rows[i].state, DBCRON_RUN_MISFIRED);
		assert_non_null(rs.rows[i].node);
		assert_non_null(rs.rows[i].claim_token);
		/* the token is one of that node's claims */
		assert_int_equal(strncmp(rs.rows[i].claim_token, rs.rows[i].node,
					 strlen(rs.rows[i].node)), 0);
	}
	conf_runs_clear(&rs);
}

/* Runs of a paused job wait, whoever made them (issue 23 item 19): a
 * retry, a triggered run and a run handed back to the pool are not
 * claimed while the job is paused, and are once it is resumed. */
static void conf_test_claim_runs_paused(void **state)
{
	conf_ctx *c = *state;
	int64_t now = conf_now(c);
	dbcron_job j;
	conf_job(&j, "pz", now + 3600000);
	CONF_OK(c, conf_upsert(c, &j, 1));
	dbcron_job_clear(&j);
	conf_planner p = {.stop = -1};
	store_claim_result r;
	int64_t id, fire_at;

	/* a retry: attempt 1 failed, attempt 2 due now, unclaimed */
	CONF_OK(c, store_job_trigger(c->s, "pz", &id, &fire_at, &c->err));
	conf_sleep_ms(5);
	CONF_OK(c, conf_claim(c, c->s, "n1", "t1", 10, &p, &r));
	assert_int_equal(r.nruns, 1);
	store_update u = conf_update(&r.runs[0], DBCRON_RUN_FAILED);
	u.finished_ms = r.now_ms;
	u.retry_due_at = r.now_ms;
	CONF_OK(c, store_apply(c->s, "n1", &u, 1, &c->err));
	assert_true(u.applied);
	store_claim_result_clear(&r);
	/* a hand-back: claimed, then released */
	CONF_OK(c, store_job_trigger(c->s, "pz", &id, &fire_at, &c->err));
	conf_sleep_ms(5);
	CONF_OK(c, conf_claim(c, c->s, "n1", "t2", 10, &p, &r));
	assert_int_equal(r.nruns, 2); /* the retry and the trigger */
	int64_t ids[2] = {r.runs[0].run.id, r.runs[1].run.id};
	const char *toks[2] = {"t2", "t2"};
	CONF_OK(c, store_runs_release(c->s, "n1", ids, toks, 2, &c->err));
	store_claim_result_clear(&r);
	/* a trigger never claimed */
	CONF_OK(c, store_job_trigger(c->s, "pz", &id, &fire_at, &c->err));
	conf_sleep_ms(5);

	CONF_OK(c, store_job_set_paused(c->s, "pz", true, -1, &c->err));
	CONF_OK(c, conf_claim(c, c->s, "n2", "t3", 10, &p, &r));
	assert_int_equal(r.nruns, 0);
	store_claim_result_clear(&r);
	conf_runs rs = {0};
	conf_list(c, "pz", DBCRON_RUN_SCHEDULED, -1, 0, &rs);
	assert_int_equal(rs.n, 3);
	for (int i = 0; i < rs.n; i++)
		assert_null(rs.rows[i].node);
	conf_runs_clear(&rs);

	CONF_OK(c, store_job_set_paused(c->s, "pz", false, now + 3600000, &c->err));
	CONF_OK(c, conf_claim(c, c->s, "n2", "t4", 10, &p, &r));
	assert_int_equal(r.nruns, 3);
	store_claim_result_clear(&r);
}

/* A claim of node with pools: slow[0..nslow) its slow pool's jobs. */
static int conf_claim_pools(conf_ctx *c, const char *node, const char *token, int max,
			    const int64_t *slow, size_t nslow, int slow_max, conf_planner *p,
			    store_claim_result *out)
{
	store_claim_req req = {
		.node_id = node, .token = token, .max = max, .plan = conf_plan, .plan_ctx = p,
		.slow_jobs = slow, .nslow = nslow, .slow_max = slow_max,
	};
	return store_claim(c->s, &req, out, &c->err);
}

/* How many runs of r belong to jobs named prefix*. */
static size_t conf_runs_named(const store_claim_result *r, const char *prefix)
{
	size_t k = 0;
	for (size_t i = 0; i < r->nruns; i++)
		k += strncmp(r->runs[i].run.job_name, prefix, strlen(prefix)) == 0;
	return k;
}

/* Pools (issue 23 item 5): the jobs a node runs on its slow pool are
 * claimed apart, at most slow_max of their runs, due fires and unclaimed
 * runs alike; at 0 they stay in the database, still due and unclaimed,
 * and another node takes them; max bounds the other jobs alone. */
static void conf_test_claim_pools(void **state)
{
	conf_ctx *c = *state;
	int64_t now = conf_now(c);
	conf_put(c, 3, "slow", now - 600);
	conf_put(c, 3, "fast", now - 500);
	int64_t slow[3];
	for (int i = 0; i < 3; i++) {
		char name[16];
		dbcron_job j;
		snprintf(name, sizeof(name), "slow%04d", i);
		CONF_OK(c, store_job_get(c->s, name, &j, &c->err));
		slow[i] = j.id;
		dbcron_job_clear(&j);
	}
	int64_t slow_run, fast_run, fire_at;
	CONF_OK(c, store_job_trigger(c->s, "slow0000", &slow_run, &fire_at, &c->err));
	conf_sleep_ms(5);
	/* next fires a minute on: none comes due during the test */
	conf_planner p = {.stop = -1, .step = 60000};
	store_claim_result r;

	/* the slow pool saturated: the fast jobs only, though budget is left */
	CONF_OK(c, conf_claim_pools(c, "n1", "t1", 10, slow, 3, 0, &p, &r));
	assert_int_equal(r.nruns, 3);
	assert_int_equal(conf_runs_named(&r, "fast"), 3);
	store_claim_result_clear(&r);
	dbcron_job got;
	CONF_OK(c, store_job_get(c->s, "slow0001", &got, &c->err));
	assert_int_equal(got.next_fire_at, now - 600); /* still due */
	dbcron_job_clear(&got);
	conf_runs rs = {0};
	conf_list(c, "slow0000", DBCRON_RUN_SCHEDULED, -1, 0, &rs);
	assert_int_equal(rs.n, 1); /* the trigger, unclaimed */
	assert_null(rs.rows[0].node);
	conf_runs_clear(&rs);

	/* another node, whose pools differ, takes what was left */
	CONF_OK(c, conf_claim(c, c->s, "n2", "t2", 1, &p, &r));
	assert_int_equal(r.nruns, 1);
	assert_int_equal(conf_runs_named(&r, "slow"), 1);
	assert_int_equal(r.runs[0].run.fire_at, now - 600);
	store_claim_result_clear(&r);

	/* room for one slow run: one, of the two slow jobs still due */
	CONF_OK(c, conf_claim_pools(c, "n1", "t3", 10, slow, 3, 1, &p, &r));
	assert_int_equal(r.nruns, 1);
	assert_int_equal(conf_runs_named(&r, "slow"), 1);
	assert_int_equal(r.runs[0].run.fire_at, now - 600);
	store_claim_result_clear(&r);

	/* the fast pool full, room in the slow one: the last slow fire and
	 * the slow job's trigger; not the fast job's trigger */
	CONF_OK(c, store_job_trigger(c->s, "fast0000", &fast_run, &fire_at, &c->err));
	conf_sleep_ms(5);
	CONF_OK(c, conf_claim_pools(c, "n1", "t4", 0, slow, 3, 5, &p, &r));
	assert_int_equal(r.nruns, 2);
	assert_int_equal(conf_runs_named(&r, "slow"), 2);
	assert_true(r.runs[0].run.id == slow_run || r.runs[1].run.id == slow_run);
	store_claim_result_clear(&r);

	CONF_OK(c, conf_claim(c, c->s, "n2", "t5", 10, &p, &r));
	assert_int_equal(r.nruns, 1);
	assert_int_equal(r.runs[0].run.id, fast_run);
	store_claim_result_clear(&r);
}

/* Pools under a joint bound (both_max): the slow jobs' pass goes first and
 * the other jobs get what it took from the bound, not what it might have
 * taken (a bound no larger than slow_max once left them nothing, issue 25). */
static void conf_test_claim_pools_joint(void **state)
{
	conf_ctx *c = *state;
	int64_t now = conf_now(c);
	conf_put(c, 1, "slow", now - 600);
	conf_put(c, 4, "fast", now - 500);
	dbcron_job j;
	CONF_OK(c, store_job_get(c->s, "slow0000", &j, &c->err));
	int64_t slow = j.id;
	dbcron_job_clear(&j);
	conf_planner p = {.stop = -1, .step = 60000};
	store_claim_result r;
	store_claim_req req = {.node_id = "n1", .token = "t1", .max = 3, .plan = conf_plan,
			       .plan_ctx = &p, .slow_jobs = &slow, .nslow = 1, .slow_max = 3,
			       .both_max = 3};
	CONF_OK(c, store_claim(c->s, &req, &r, &c->err));
	assert_int_equal(r.nruns, 3);
	assert_int_equal(conf_runs_named(&r, "slow"), 1);
	assert_int_equal(conf_runs_named(&r, "fast"), 2);
	store_claim_result_clear(&r);
	/* the bound holds over the two passes: one run in all */
	req.token = "t2";
	req.both_max = 1;
	CONF_OK(c, store_claim(c->s, &req, &r, &c->err));
	assert_int_equal(r.nruns, 1);
	assert_int_equal(conf_runs_named(&r, "fast"), 1);
	store_claim_result_clear(&r);
}

static int conf_name_add(void *ctx, const char *name)
{
	char *buf = ctx;
	size_t l = strlen(buf);
	snprintf(buf + l, 256 - l, "%s ", name);
	return 0;
}

/* A handler registered after its node: added with a heartbeat, only under
 * the node's own incarnation; the names it had stay. */
static void conf_test_node_handlers_add(void **state)
{
	conf_ctx *c = *state;
	static const char *const first[] = {"sleep"};
	static const char *const later[] = {"sleep", "late"};
	store_node_info ni = {.node_id = "n1", .incarnation = "inc-a", .host = "h", .pid = 1,
			      .workers = 1, .lease_ms = 600000, .handlers = first, .nhandlers = 1};
	CONF_OK(c, store_node_register(c->s, &ni, &c->err));
	int64_t now = -1;
	assert_int_equal(store_node_handlers_add(c->s, "n1", "inc-old", 600000, later, 2, &now,
						 &c->err),
			 DBCRON_EFENCED);
	char live[256] = "";
	CONF_OK(c, store_handlers_live(c->s, conf_name_add, live, &c->err));
	assert_string_equal(live, "sleep ");
	CONF_OK(c, store_node_handlers_add(c->s, "n1", "inc-a", 600000, later, 2, &now, &c->err));
	assert_true(now > 0);
	live[0] = '\0';
	CONF_OK(c, store_handlers_live(c->s, conf_name_add, live, &c->err));
	assert_string_equal(live, "late sleep ");
}

static void conf_test_claim(void **state)
{
	conf_ctx *c = *state;
	int64_t now = conf_now(c);
	conf_put(c, 5, "due", now - 500);
	conf_put(c, 2, "later", now + 3600000);

	/* The next fires a minute on: "not due yet" must hold however slowly
	 * a loaded machine gets from one claim to the next. */
	conf_planner p = {.stop = -1, .step = 60000};
	store_claim_result r;
	CONF_OK(c, conf_claim(c, c->s, "n1", "tok1", 100, &p, &r));
	assert_true(r.now_ms >= now);
	assert_int_equal(r.nruns, 5);
	assert_int_equal(p.calls, 5);
	for (size_t i = 0; i < r.nruns; i++) {
		assert_int_equal(r.runs[i].run.fire_at, now - 500);
		assert_int_equal(r.runs[i].run.attempt, 1);
		assert_int_equal(r.runs[i].run.state, DBCRON_RUN_SCHEDULED);
		assert_string_equal(r.runs[i].run.claim_token, "tok1");
		assert_string_equal(r.runs[i].run.node, "n1");
		assert_non_null(r.runs[i].job);
		assert_int_equal(r.runs[i].job->id, r.runs[i].run.job_id);
		assert_string_equal(r.runs[i].job->name, r.runs[i].run.job_name);
	}
	store_claim_result_clear(&r);

	dbcron_job got;
	CONF_OK(c, store_job_get(c->s, "due0003", &got, &c->err));
	assert_int_equal(got.next_fire_at, now + 59500);
	dbcron_job_clear(&got);

	/* Nothing else is due now; with a horizon past a minute the next
	 * fires are. */
	CONF_OK(c, conf_claim(c, c->s, "n1", "tok2", 100, &p, &r));
	assert_int_equal(r.nruns, 0);
	store_claim_result_clear(&r);
	store_claim_req req = {.node_id = "n1", .token = "tok3", .horizon_ms_ahead = 61000,
			       .max = 3, .plan = conf_plan, .plan_ctx = &p};
	CONF_OK(c, store_claim(c->s, &req, &r, &c->err));
	assert_int_equal(r.nruns, 3); /* backpressure: max */
	assert_int_equal(r.runs[0].run.fire_at, now + 59500);
	store_claim_result_clear(&r);

	/* Paused jobs are not claimed. */
	for (int i = 0; i < 5; i++) {
		char name[16];
		snprintf(name, sizeof(name), "due%04d", i);
		CONF_OK(c, store_job_set_paused(c->s, name, true, -1, &c->err));
	}
	req.token = "tok4";
	req.max = 100;
	CONF_OK(c, store_claim(c->s, &req, &r, &c->err));
	assert_int_equal(r.nruns, 0);
	store_claim_result_clear(&r);
}

/* Plans the two fires in ctx (a store_fire[2]) and no next fire. */
static int conf_plan_fixed(void *ctx, const dbcron_job *job, int64_t now_ms,
			   int64_t horizon_ms, store_plan *out)
{
	(void)job;
	(void)now_ms;
	(void)horizon_ms;
	out->fires = ctx;
	out->nfires = 2;
	out->next_fire_at = -1;
	return DBCRON_OK;
}

static void conf_test_claim_terminal_fires(void **state)
{
	conf_ctx *c = *state;
	int64_t now = conf_now(c);
	conf_put(c, 1, "mf", now - 10000);

	/* A planner that writes a MISFIRED record and one SCHEDULED fire. */
	store_fire fires[2] = {
		{.fire_at = now - 10000, .due_at = now - 10000,
		 .state = DBCRON_RUN_MISFIRED, .missed = 0, .error = "missed by 10 s"},
		{.fire_at = now - 9000, .due_at = now, .state = DBCRON_RUN_SCHEDULED, .missed = 8},
	};
	store_claim_req req = {.node_id = "n1", .token = "t", .max = 10,
			       .plan = conf_plan_fixed, .plan_ctx = fires};
	store_claim_result r;
	CONF_OK(c, store_claim(c->s, &req, &r, &c->err));
	assert_int_equal(r.nruns, 1);
	assert_int_equal(r.nterminal, 1);
	assert_int_equal(r.runs[0].run.missed, 8);
	assert_int_equal(r.runs[0].run.due_at, now);
	store_claim_result_clear(&r);

	conf_runs rs = {0};
	conf_list(c, "mf0000", DBCRON_RUN_MISFIRED, -1, 0, &rs);
	assert_int_equal(rs.n, 1);
	assert_string_equal(rs.rows[0].error, "missed by 10 s");
	assert_true(rs.rows[0].finished_ms >= now);
	assert_null(rs.rows[0].node);
	conf_runs_clear(&rs);
	dbcron_job got;
	CONF_OK(c, store_job_get(c->s, "mf0000", &got, &c->err));
	assert_int_equal(got.next_fire_at, -1);
	dbcron_job_clear(&got);
}

static void conf_test_claim_two_claimers(void **state)
{
	conf_ctx *c = *state;
	store *s2;
	int64_t now = conf_now(c);
	conf_put(c, 10, "x", now - 100);
	assert_int_equal(conf_open(c, &s2), 0);

	conf_planner p = {.stop = -1};
	store_claim_result a, b;
	CONF_OK(c, conf_claim(c, c->s, "n1", "ta", 4, &p, &a));
	CONF_OK(c, conf_claim(c, s2, "n2", "tb", 100, &p, &b));
	assert_int_equal(a.nruns, 4);
	assert_int_equal(b.nruns, 6);
	for (size_t i = 0; i < a.nruns; i++)
		for (size_t j = 0; j < b.nruns; j++) {
			assert_true(a.runs[i].run.id != b.runs[j].run.id);
			assert_true(a.runs[i].run.job_id != b.runs[j].run.job_id);
		}
	store_claim_result_clear(&b);

	/* Put x0000's next fire back to the fire A already holds: the second
	 * insert of (job, fire_at, 1) conflicts and is not handed out. */
	const char *name = a.runs[0].job->name;
	CONF_OK(c, store_job_set_paused(c->s, name, false, a.runs[0].run.fire_at, &c->err));
	CONF_OK(c, conf_claim(c, s2, "n2", "tc", 100, &p, &b));
	assert_int_equal(b.nruns, 0);
	assert_int_equal(b.nterminal, 0);
	store_claim_result_clear(&b);
	conf_runs rs = {0};
	conf_list(c, name, 0, -1, 0, &rs);
	assert_int_equal(rs.n, 1);
	assert_string_equal(rs.rows[0].claim_token, "ta");
	conf_runs_clear(&rs);
	store_claim_result_clear(&a);
	store_close(s2);
}

/*
 * Overlap across nodes (issue 28 item 2, claim.c): n1 runs each job; n2's
 * claim hands out no fire of them unless the policy allows it: skip
 * records the fire SKIPPED naming n1, queue leaves the job due, replace
 * asks n1's run to stop and leaves the job due, allow claims; a trigger of
 * the busy queue job is not handed to n2.  Once n1's runs end, n2 takes
 * what waited.
 */
static void conf_test_claim_overlap(void **state)
{
	conf_ctx *c = *state;
	int64_t now = conf_now(c);
	static const char *const names[] = {"ov-skip", "ov-queue", "ov-replace", "ov-allow"};
	static const dbcron_overlap pol[] = {DBCRON_OVERLAP_SKIP, DBCRON_OVERLAP_QUEUE,
					     DBCRON_OVERLAP_REPLACE, DBCRON_OVERLAP_ALLOW};
	dbcron_job jobs[4];
	for (int i = 0; i < 4; i++) {
		conf_job(&jobs[i], names[i], now - 2000);
		jobs[i].overlap = pol[i];
	}
	CONF_OK(c, conf_upsert(c, jobs, 4));
	for (int i = 0; i < 4; i++)
		dbcron_job_clear(&jobs[i]);
	conf_planner p = {.stop = -1}; /* next fires at now - 1000: due */
	store_claim_result a, b;
	CONF_OK(c, conf_claim(c, c->s, "n1", "ta", 10, &p, &a));
	assert_int_equal(a.nruns, 4);
	store_update u[4];
	int64_t replaced = -1;
	for (size_t i = 0; i < 4; i++) {
		u[i] = conf_update(&a.runs[i], DBCRON_RUN_RUNNING);
		u[i].started_ms = now - 2000;
		if (strcmp(a.runs[i].job->name, "ov-replace") == 0)
			replaced = a.runs[i].run.id;
	}
	CONF_OK(c, store_apply(c->s, "n1", u, 4, &c->err));
	int64_t trig, fire_at;
	CONF_OK(c, store_job_trigger(c->s, "ov-queue", &trig, &fire_at, &c->err));
	conf_sleep_ms(5);

	CONF_OK(c, conf_claim(c, c->s, "n2", "tb", 10, &p, &b));
	assert_int_equal(b.nruns, 1);
	assert_string_equal(b.runs[0].job->name, "ov-allow");
	store_claim_result_clear(&b);
	conf_runs rs = {0};
	conf_list(c, "ov-skip", DBCRON_RUN_SKIPPED, -1, 0, &rs);
	assert_int_equal(rs.n, 1);
	assert_int_equal(rs.rows[0].fire_at, now - 1000);
	assert_non_null(strstr(rs.rows[0].error, "running on node n1"));
	conf_list(c, "ov-queue", DBCRON_RUN_SCHEDULED, -1, 0, &rs);
	assert_int_equal(rs.n, 1); /* the trigger, unclaimed */
	assert_null(rs.rows[0].node);
	conf_runs_clear(&rs);
	dbcron_job got;
	CONF_OK(c, store_job_get(c->s, "ov-queue", &got, &c->err));
	assert_int_equal(got.next_fire_at, now - 1000); /* still due */
	dbcron_job_clear(&got);
	dbcron_run run;
	CONF_OK(c, store_run_get(c->s, replaced, &run, &c->err));
	assert_true(run.cancel_requested_ms > 0);
	dbcron_run_clear(&run);

	/* n1's runs end: what waited goes to n2 */
	for (size_t i = 0; i < 4; i++) {
		u[i] = conf_update(&a.runs[i], DBCRON_RUN_SUCCEEDED);
		u[i].finished_ms = now;
	}
	CONF_OK(c, store_apply(c->s, "n1", u, 4, &c->err));
	store_claim_result_clear(&a);
	CONF_OK(c, conf_claim(c, c->s, "n2", "tc", 10, &p, &b));
	assert_int_equal(conf_runs_named(&b, "ov-queue"), 2); /* its fire and the trigger */
	assert_int_equal(conf_runs_named(&b, "ov-replace"), 1);
	store_claim_result_clear(&b);
}

/*
 * The due-job claim's busy column (CLAIM_DUE_JOBS, claim.c due_busy): where
 * the claim holds the database, only the jobs it read busy on another node
 * are read again (JOBS_BUSY), so a claim of skip jobs no other node runs
 * costs the statements of a claim of allow jobs; elsewhere JOBS_BUSY reads
 * all of them, one statement more.  In a claim mixing both, the busy job's
 * fire is SKIPPED naming the other node and the others are claimed.
 */
static void conf_test_claim_busy_column(void **state)
{
	conf_ctx *c = *state;
	int64_t now = conf_now(c);
	bool current = !(c->s->d->caps & STORE_CAP_MULTI_WRITER);
	conf_overlap = DBCRON_OVERLAP_SKIP;
	conf_put(c, 20, "bs", now - 300); /* claimed first: the older */
	conf_put(c, 1, "hx", now - 5000);
	conf_overlap = DBCRON_OVERLAP_ALLOW;
	conf_put(c, 20, "ba", now - 200);
	conf_planner p = {.stop = -1, .step = 3600000};
	store_claim_result a, b;
	/* n1 runs hx from before its next fire (now - 5000 + 1 h: not due) */
	CONF_OK(c, conf_claim(c, c->s, "n1", "ta", 1, &p, &a));
	assert_int_equal(conf_runs_named(&a, "hx"), 1);
	store_update u = conf_update(&a.runs[0], DBCRON_RUN_RUNNING);
	u.started_ms = now - 5000;
	CONF_OK(c, store_apply(c->s, "n1", &u, 1, &c->err));

	uint64_t before = c->s->stmt_count;
	CONF_OK(c, conf_claim(c, c->s, "n2", "tb", 20, &p, &b));
	uint64_t used_skip = c->s->stmt_count - before;
	assert_int_equal(conf_runs_named(&b, "bs"), 20);
	store_claim_result_clear(&b);
	before = c->s->stmt_count;
	CONF_OK(c, conf_claim(c, c->s, "n2", "tc", 20, &p, &b));
	uint64_t used_allow = c->s->stmt_count - before;
	assert_int_equal(conf_runs_named(&b, "ba"), 20);
	store_claim_result_clear(&b);
	print_message("claim of 20 skip jobs: %llu statements, of 20 allow jobs: %llu\n",
		      (unsigned long long)used_skip, (unsigned long long)used_allow);
	assert_int_equal(used_skip, used_allow + (current ? 0 : 1));

	/* hx due again beside new skip jobs: its fire SKIPPED, theirs claimed */
	CONF_OK(c, store_job_set_paused(c->s, "hx0000", true, -1, &c->err));
	CONF_OK(c, store_job_set_paused(c->s, "hx0000", false, now - 100, &c->err));
	conf_overlap = DBCRON_OVERLAP_SKIP;
	conf_put(c, 3, "bt", now - 100);
	conf_overlap = DBCRON_OVERLAP_ALLOW;
	CONF_OK(c, conf_claim(c, c->s, "n2", "td", 20, &p, &b));
	assert_int_equal(conf_runs_named(&b, "bt"), 3);
	assert_int_equal(conf_runs_named(&b, "hx"), 0);
	store_claim_result_clear(&b);
	conf_runs rs = {0};
	conf_list(c, "hx0000", DBCRON_RUN_SKIPPED, -1, 0, &rs);
	assert_int_equal(rs.n, 1);
	assert_int_equal(rs.rows[0].fire_at, now - 100);
	assert_non_null(strstr(rs.rows[0].error, "running on node n1"));
	conf_runs_clear(&rs);
	store_claim_result_clear(&a);
}

/*
 * Concurrency caps (issue 28 item 3, caps.c): three jobs of tag "t" capped
 * at 2.  n1's claim takes two fires; n2's takes none of the tag (the
 * third waits, still due) and the trigger of a capped job goes back
 * unclaimed; once one of n1's runs ends, n2 takes one slot, in due order.
 * A job of an uncapped tag is not held back.
 */
static void conf_test_claim_caps(void **state)
{
	conf_ctx *c = *state;
	int64_t now = conf_now(c);
	dbcron_job jobs[4];
	for (int i = 0; i < 4; i++) {
		char name[16];
		snprintf(name, sizeof(name), i < 3 ? "cap%d" : "free%d", i);
		conf_job(&jobs[i], name, now - 3000 + i * 10);
		jobs[i].tags = dbcron__strdup(i < 3 ? "x\nt" : "other");
	}
	CONF_OK(c, conf_upsert(c, jobs, 4));
	for (int i = 0; i < 4; i++)
		dbcron_job_clear(&jobs[i]);
	CONF_OK(c, store_tag_set(c->s, "t", 2, &c->err));
	conf_planner p = {.stop = -1, .step = 60000};
	store_claim_result a, b;
	CONF_OK(c, conf_claim(c, c->s, "n1", "ta", 10, &p, &a));
	assert_int_equal(conf_runs_named(&a, "cap"), 2);
	assert_int_equal(conf_runs_named(&a, "free"), 1);
	int64_t trig, fire_at;
	CONF_OK(c, store_job_trigger(c->s, "cap0", &trig, &fire_at, &c->err));
	conf_sleep_ms(5);
	CONF_OK(c, conf_claim(c, c->s, "n2", "tb", 10, &p, &b));
	assert_int_equal(b.nruns, 0);
	store_claim_result_clear(&b);
	dbcron_job got;
	CONF_OK(c, store_job_get(c->s, "cap2", &got, &c->err));
	assert_int_equal(got.next_fire_at, now - 3000 + 20); /* still due */
	dbcron_job_clear(&got);

	/* one of n1's runs ends: one slot, for the earliest due (cap2's fire) */
	store_update u = conf_update(&a.runs[0], DBCRON_RUN_SUCCEEDED);
	u.finished_ms = now;
	CONF_OK(c, store_apply(c->s, "n1", &u, 1, &c->err));
	CONF_OK(c, conf_claim(c, c->s, "n2", "tc", 10, &p, &b));
	assert_int_equal(b.nruns, 1);
	assert_string_equal(b.runs[0].job->name, "cap2");
	store_claim_result_clear(&b);
	CONF_OK(c, conf_claim(c, c->s, "n2", "td", 10, &p, &b));
	assert_int_equal(b.nruns, 0); /* the trigger still waits */
	store_claim_result_clear(&b);
	bool deleted;
	CONF_OK(c, store_tag_delete(c->s, "t", &deleted, &c->err));
	assert_true(deleted);
	CONF_OK(c, conf_claim(c, c->s, "n2", "te", 10, &p, &b));
	assert_int_equal(b.nruns, 1); /* uncapped: the trigger goes */
	assert_int_equal(b.runs[0].run.id, trig);
	store_claim_result_clear(&b);
	store_claim_result_clear(&a);
}

/* ---- concurrent claimers, in separate processes ---- */

/* A child of conf_test_concurrent_claimers: claims in batches of 7, every
 * other claim through the schedule lock row, starts and finishes each run
 * it got in one apply, and writes (run id, its index) pairs to fd.  Stops
 * when a claim comes back empty twice: the last child standing drains what
 * the others left, so the work, not a time window, decides the end. */
static int conf_claimer_child(const char *url, int idx, int fd, int64_t stop)
{
	store *s = NULL;
	dbcron_err err = {0};
	char node[32], tok[48];
	int empty = 0, rc = 0;
	if (store_open(url, &s, &err)) {
		fprintf(stderr, "child %d: open: %s\n", idx, err.msg);
		return 2;
	}
	snprintf(node, sizeof(node), "node-%d", idx);
	conf_planner p = {.stop = stop};
	for (int cycle = 0; empty < 2; cycle++) {
		store_claim_result r;
		snprintf(tok, sizeof(tok), "tok-%d-%d", idx, cycle);
		store_claim_req req = {.node_id = node, .token = tok, .max = 7,
				       .plan = conf_plan, .plan_ctx = &p,
				       .lock_row = cycle % 2 == 1};
		if (store_claim(s, &req, &r, &err)) {
			/* two claimers may deadlock or find the file locked: again */
			if (err.code == DBCRON_EBUSY)
				continue;
			fprintf(stderr, "child %d: claim: %s\n", idx, err.msg);
			rc = 3;
			break;
		}
		empty = r.nruns ? 0 : empty + 1;
		/* backpressure: never more than asked for */
		if (r.nruns > 7) {
			fprintf(stderr, "child %d: a claim of at most 7 got %zu\n", idx, r.nruns);
			rc = 7;
		}
		store_update ups[14];
		size_t n = 0;
		for (size_t i = 0; !rc && i < r.nruns; i++) {
			const store_claimed *cl = &r.runs[i];
			int64_t pair[2] = {cl->run.id, idx};
			if (strcmp(cl->run.node, node) || strcmp(cl->run.claim_token, tok) ||
			    cl->job->id != cl->run.job_id ||
			    write(fd, pair, sizeof(pair)) != (ssize_t)sizeof(pair)) {
				rc = 4;
				break;
			}
			store_update a = conf_update(cl, DBCRON_RUN_RUNNING);
			a.started_ms = r.now_ms;
			store_update b = conf_update(cl, DBCRON_RUN_SUCCEEDED);
			b.finished_ms = r.now_ms;
			b.has_exit_code = true;
			ups[n++] = a;
			ups[n++] = b;
		}
		/* a deadlock with another claimer rolls the apply back: again,
		 * as the node's flush does (dbwrite.c keep_for_retry) */
		int arc = 0;
		for (int t = 0; !rc && n && t < 20 && (t == 0 || err.code == DBCRON_EBUSY); t++)
			arc = store_apply(s, node, ups, n, &err);
		if (arc) {
			fprintf(stderr, "child %d: apply: %s\n", idx, err.msg);
			rc = 5;
		}
		for (size_t i = 0; !rc && i < n; i++)
			if (!ups[i].applied)
				rc = 6;
		store_claim_result_clear(&r);
		if (rc)
			break;
	}
	store_close(s);
	return rc;
}

typedef struct conf_cc_check {
	const int64_t (*pairs)[2]; /* (run id, child) sorted by run id */
	size_t npairs;
	size_t rows, wrong_owner, trig_done;
	int64_t first[100], last[100];
	int count[100];
} conf_cc_check;

static int conf_cc_row(void *ctx, const dbcron_run *r)
{
	conf_cc_check *k = ctx;
	size_t lo = 0, hi = k->npairs;
	k->rows++;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (k->pairs[mid][0] < r->id)
			lo = mid + 1;
		else
			hi = mid;
	}
	char want[32] = "";
	if (lo < k->npairs && k->pairs[lo][0] == r->id)
		snprintf(want, sizeof(want), "node-%d", (int)k->pairs[lo][1]);
	/* claimed by one child, SUCCEEDED by that child */
	if (!*want || r->state != DBCRON_RUN_SUCCEEDED || !r->node || strcmp(r->node, want))
		k->wrong_owner++;
	if (strcmp(r->job_name, "trig") == 0) {
		k->trig_done += r->state == DBCRON_RUN_SUCCEEDED;
		return 0;
	}
	int j = atoi(r->job_name + 2);
	if (j < 0 || j >= 100)
		return 1;
	if (!k->count[j]++ || r->fire_at < k->first[j])
		k->first[j] = r->fire_at;
	if (r->fire_at > k->last[j])
		k->last[j] = r->fire_at;
	return 0;
}

static int conf_cmp_pair(const void *a, const void *b)
{
	const int64_t *x = a, *y = b;
	return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* Four processes claim 100 jobs with 10 fires each due, and five triggered
 * runs waiting like retries, every other claim through the schedule lock
 * row: every fire is claimed once, by one process, and finished by it;
 * nothing is left behind; no series has a gap. */
static void conf_test_concurrent_claimers(void **state)
{
	conf_ctx *c = *state;
	enum { NKIDS = 4, NJOBS = 100, NFIRES = 10, NTRIG = 5 };
	int64_t now = conf_now(c);
	int64_t first = now - NFIRES * 1000;
	/* the default policy: a fire of a job another claimer holds waits */
	conf_overlap = DBCRON_OVERLAP_SKIP;
	conf_put(c, NJOBS, "cc", first);
	conf_overlap = DBCRON_OVERLAP_ALLOW;
	dbcron_job trig;
	conf_job(&trig, "trig", now + 3600000);
	CONF_OK(c, conf_upsert(c, &trig, 1));
	dbcron_job_clear(&trig);
	int64_t id;
	for (int i = 0; i < NTRIG; i++)
		CONF_OK(c, store_job_trigger(c->s, "trig", &id, NULL, &c->err));

	FILE *out[NKIDS];
	pid_t kids[NKIDS];
	for (int i = 0; i < NKIDS; i++) {
		out[i] = tmpfile();
		assert_non_null(out[i]);
		fflush(NULL);
		kids[i] = fork();
		assert_true(kids[i] >= 0);
		if (kids[i] == 0)
			_exit(conf_claimer_child(c->url, i, fileno(out[i]),
						 first + (NFIRES - 1) * 1000));
	}
	for (int i = 0; i < NKIDS; i++) {
		int st = 0;
		assert_int_equal(waitpid(kids[i], &st, 0), kids[i]);
		assert_true(WIFEXITED(st));
		assert_int_equal(WEXITSTATUS(st), 0);
	}
	enum { CAP = NJOBS * NFIRES + NTRIG + 64 };
	int64_t(*pairs)[2] = test_calloc(CAP, sizeof(*pairs));
	size_t total = 0;
	for (int i = 0; i < NKIDS; i++) {
		rewind(out[i]);
		size_t got = fread(pairs + total, sizeof(*pairs), CAP - total, out[i]);
		print_message("claimer %d: %zu runs\n", i, got);
		total += got;
		fclose(out[i]);
	}
	/* every fire and every triggered run claimed, each exactly once */
	assert_int_equal(total, NJOBS * NFIRES + NTRIG);
	qsort(pairs, total, sizeof(*pairs), conf_cmp_pair);
	for (size_t i = 1; i < total; i++)
		assert_true(pairs[i][0] != pairs[i - 1][0]);

	/* The run log agrees: one row for each, SUCCEEDED by its claimer, no
	 * row nobody claimed, every series whole. */
	conf_cc_check *k = test_calloc(1, sizeof(*k));
	k->pairs = (const int64_t(*)[2])pairs;
	k->npairs = total;
	store_run_filter f = {.since_ms = -1};
	CONF_OK(c, store_runs_list(c->s, &f, conf_cc_row, k, &c->err));
	assert_int_equal(k->rows, total);
	assert_int_equal(k->wrong_owner, 0);
	assert_int_equal(k->trig_done, NTRIG);
	for (int j = 0; j < NJOBS; j++) {
		assert_int_equal(k->count[j], NFIRES);
		assert_int_equal(k->first[j], first);
		assert_int_equal(k->last[j], first + (NFIRES - 1) * 1000);
	}
	test_free(k);
	test_free(pairs);
}

static void conf_test_claim_statements(void **state)
{
	conf_ctx *c = *state;
	int64_t now = conf_now(c);
	conf_put(c, 500, "bulk", now - 100);
	conf_planner p = {.stop = -1};
	store_claim_result r;
	uint64_t before = c->s->stmt_count;
	CONF_OK(c, conf_claim(c, c->s, "n1", "t", 1000, &p, &r));
	uint64_t used = c->s->stmt_count - before;
	assert_int_equal(r.nruns, 500);
	print_message("claim of 500 fires: %llu statements\n", (unsigned long long)used);
	assert_true(used > 0);
	assert_true(used < 10);

	/* Completing them is O(1) statements too. */
	store_update *ups = test_calloc(r.nruns, sizeof(*ups));
	for (size_t i = 0; i < r.nruns; i++) {
		ups[i] = conf_update(&r.runs[i], DBCRON_RUN_SUCCEEDED);
		ups[i].started_ms = now;
		ups[i].finished_ms = now + 1;
		ups[i].has_exit_code = true;
	}
	before = c->s->stmt_count;
	CONF_OK(c, store_apply(c->s, "n1", ups, r.nruns, &c->err));
	used = c->s->stmt_count - before;
	print_message("apply of 500 updates: %llu statements\n", (unsigned long long)used);
	assert_true(used < 10);
	for (size_t i = 0; i < r.nruns; i++)
		assert_true(ups[i].applied);
	test_free(ups);
	store_claim_result_clear(&r);
}

/* ---- apply ---- */

/* The run state machine in the database: a RUNNING run only ends (issue
 * 23 item 15: a paused fire was written RUNNING -> SKIPPED, with a start
 * time).  SKIPPED and MISFIRED apply to a SCHEDULED run only; a RUNNING
 * run takes ABANDONED, and RUNNING again (a start write tried twice). */
static void conf_test_apply_state_machine(void **state)
{
	conf_ctx *c = *state;
	int64_t now = conf_now(c);
	conf_put(c, 2, "sm", now - 100);
	conf_planner p = {.stop = -1};
	store_claim_result r;
	CONF_OK(c, conf_claim(c, c->s, "n1", "tok", 10, &p, &r));
	assert_int_equal(r.nruns, 2);
	store_update u = conf_update(&r.runs[0], DBCRON_RUN_RUNNING);
	u.started_ms = now;
	CONF_OK(c, store_apply(c->s, "n1", &u, 1, &c->err));
	assert_true(u.applied);
	CONF_OK(c, store_apply(c->s, "n1", &u, 1, &c->err));
	assert_true(u.applied);
	const dbcron_run_state refused[] = {DBCRON_RUN_SKIPPED, DBCRON_RUN_MISFIRED};
	for (size_t i = 0; i < 2; i++) {
		u = conf_update(&r.runs[0], refused[i]);
		u.finished_ms = now + 1;
		CONF_OK(c, store_apply(c->s, "n1", &u, 1, &c->err));
		assert_false(u.applied);
	}
	dbcron_run run;
	CONF_OK(c, store_run_get(c->s, r.runs[0].run.id, &run, &c->err));
	assert_int_equal(run.state, DBCRON_RUN_RUNNING);
	dbcron_run_clear(&run);
	u = conf_update(&r.runs[0], DBCRON_RUN_ABANDONED);
	u.finished_ms = now + 2;
	CONF_OK(c, store_apply(c->s, "n1", &u, 1, &c->err));
	assert_true(u.applied);
	/* a SCHEDULED run may be SKIPPED, and gets no start time */
	u = conf_update(&r.runs[1], DBCRON_RUN_SKIPPED);
	u.finished_ms = now + 3;
	CONF_OK(c, store_apply(c->s, "n1", &u, 1, &c->err));
	assert_true(u.applied);
	CONF_OK(c, store_run_get(c->s, r.runs[1].run.id, &run, &c->err));
	assert_int_equal(run.state, DBCRON_RUN_SKIPPED);
	assert_true(run.started_ms < 0);
	dbcron_run_clear(&run);
	store_claim_result_clear(&r);
}

static void conf_test_apply(void **state)
{
	conf_ctx *c = *state;
	int64_t now = conf_now(c);
	conf_put(c, 3, "ap", now - 100);
	conf_planner p = {.stop = -1};
	store_claim_result r;
	CONF_OK(c, conf_claim(c, c->s, "n1", "tok", 10, &p, &r));
	assert_int_equal(r.nruns, 3);

	store_update u[5];
	/* run 0: RUNNING then FAILED with a retry, in one batch. */
	u[0] = conf_update(&r.runs[0], DBCRON_RUN_RUNNING);
	u[0].started_ms = now;
	u[1] = conf_update(&r.runs[0], DBCRON_RUN_FAILED);
	u[1].finished_ms = now + 10;
	u[1].has_exit_code = true;
	u[1].exit_code = 3;
	u[1].error = "exit status 3";
	u[1].output = "out\n";
	u[1].retry_due_at = now + 60000;
	/* run 1: wrong token -> refused. */
	u[2] = conf_update(&r.runs[1], DBCRON_RUN_SUCCEEDED);
	u[2].token = "stolen";
	/* run 2: right token, wrong node -> refused below. */
	u[3] = conf_update(&r.runs[2], DBCRON_RUN_SUCCEEDED);
	CONF_OK(c, store_apply(c->s, "n1", u, 3, &c->err));
	assert_true(u[0].applied);
	assert_true(u[1].applied);
	assert_false(u[2].applied);
	CONF_OK(c, store_apply(c->s, "n2", &u[3], 1, &c->err));
	assert_false(u[3].applied);

	conf_runs rs = {0};
	conf_list(c, r.runs[0].run.job_name, 0, -1, 0, &rs);
	assert_int_equal(rs.n, 2);
	assert_int_equal(rs.rows[0].attempt, 1);
	assert_int_equal(rs.rows[0].state, DBCRON_RUN_FAILED);
	assert_int_equal(rs.rows[0].started_ms, now);
	assert_int_equal(rs.rows[0].finished_ms, now + 10);
	assert_true(rs.rows[0].has_exit_code);
	assert_int_equal(rs.rows[0].exit_code, 3);
	assert_string_equal(rs.rows[0].error, "exit status 3");
	assert_string_equal(rs.rows[0].output, "out\n");
	assert_int_equal(rs.rows[1].attempt, 2);
	assert_int_equal(rs.rows[1].state, DBCRON_RUN_SCHEDULED);
	assert_int_equal(rs.rows[1].due_at, now + 60000);
	assert_int_equal(rs.rows[1].fire_at, rs.rows[0].fire_at);
	assert_null(rs.rows[1].node);

	/* A terminal row is final: even its owner cannot change it again. */
	u[4] = conf_update(&r.runs[0], DBCRON_RUN_SUCCEEDED);
	CONF_OK(c, store_apply(c->s, "n1", &u[4], 1, &c->err));
	assert_false(u[4].applied);
	conf_list(c, r.runs[0].run.job_name, 0, -1, 0, &rs);
	assert_int_equal(rs.rows[0].state, DBCRON_RUN_FAILED);

	/* job_next_fire_at is set only where next_fire_at is NULL. */
	dbcron_job after;
	conf_job(&after, "after", -1);
	after.kind = DBCRON_SCHED_AFTER;
	CONF_OK(c, conf_upsert(c, &after, 1));
	u[0] = conf_update(&r.runs[1], DBCRON_RUN_SUCCEEDED);
	u[0].job_id = after.id;
	u[0].job_next_fire_at = now + 777;
	u[1] = conf_update(&r.runs[2], DBCRON_RUN_SUCCEEDED);
	u[1].job_next_fire_at = now + 888; /* job has a next fire: kept */
	CONF_OK(c, store_apply(c->s, "n1", u, 2, &c->err));
	assert_true(u[0].applied);
	assert_true(u[1].applied);
	dbcron_job got;
	CONF_OK(c, store_job_get(c->s, "after", &got, &c->err));
	assert_int_equal(got.next_fire_at, now + 777);
	dbcron_job_clear(&got);
	CONF_OK(c, store_job_get(c->s, r.runs[2].job->name, &got, &c->err));
	assert_int_equal(got.next_fire_at, now + 900);
	dbcron_job_clear(&got);
	dbcron_job_clear(&after);

	/* The retry is claimable once due, and not before: a claim whose
	 * horizon ends before its due time leaves it; one that covers it takes
	 * it, as attempt 2 of the same fire, for the claiming node. */
	p.stop = 0; /* due jobs fire once more, then stop */
	store_claim_result r2;
	store_claim_req req = {.node_id = "n2", .token = "t2", .horizon_ms_ahead = 0,
			       .max = 10, .plan = conf_plan, .plan_ctx = &p};
	CONF_OK(c, store_claim(c->s, &req, &r2, &c->err));
	for (size_t i = 0; i < r2.nruns; i++)
		assert_int_equal(r2.runs[i].run.attempt, 1);
	store_claim_result_clear(&r2);
	req.token = "t3";
	req.horizon_ms_ahead = 61000;
	CONF_OK(c, store_claim(c->s, &req, &r2, &c->err));
	int retries = 0;
	for (size_t i = 0; i < r2.nruns; i++) {
		const dbcron_run *got2 = &r2.runs[i].run;
		if (got2->attempt == 1)
			continue;
		retries++;
		assert_int_equal(got2->attempt, 2);
		assert_int_equal(got2->job_id, r.runs[0].run.job_id);
		assert_int_equal(got2->fire_at, r.runs[0].run.fire_at);
		assert_int_equal(got2->due_at, now + 60000);
		assert_string_equal(got2->claim_token, "t3");
	}
	assert_int_equal(retries, 1);
	conf_list(c, r.runs[0].run.job_name, 0, -1, 0, &rs);
	retries = 0;
	for (int i = 0; i < rs.n; i++) {
		if (rs.rows[i].attempt != 2)
			continue;
		retries++;
		assert_int_equal(rs.rows[i].state, DBCRON_RUN_SCHEDULED);
		assert_string_equal(rs.rows[i].node, "n2");
		assert_string_equal(rs.rows[i].claim_token, "t3");
	}
	assert_int_equal(retries, 1);
	store_claim_result_clear(&r2);
	conf_runs_clear(&rs);
	store_claim_result_clear(&r);
}

/* ---- nodes ---- */

static void conf_node(store_node_info *n, const char *id, const char *inc, int64_t lease)
{
	memset(n, 0, sizeof(*n));
	n->node_id = id;
	n->incarnation = inc;
	n->host = "testhost";
	n->pid = 42;
	n->workers = 4;
	n->lease_ms = lease;
}

/* The runs of job `name` by node index: exactly `total` of them, each
 * for its node of `ids` (in id order), attempt 1. */
static void conf_every_runs(conf_ctx *c, const char *name, int total, const char *const *ids,
			    conf_runs *rs)
{
	conf_list(c, name, 0, -1, 0, rs);
	assert_int_equal(rs->n, total);
	for (int i = 0; i < rs->n; i++) {
		const dbcron_run *r = &rs->rows[i];
		assert_int_equal(r->attempt, 1);
		assert_int_equal(r->node_total, total);
		assert_non_null(r->for_node);
		assert_string_equal(r->for_node, ids[r->node_index]);
		for (int k = 0; k < i; k++)
			assert_int_not_equal(rs->rows[k].node_index, r->node_index);
	}
}

/* Every node (issue 28 item 6, docs/scheduler.md "Every node"): the claim
 * of an every-node fire writes one run per live node, in id order, the
 * claimer's claimed; each node's claim takes its own run only; a node
 * that joins later gets none of that fire; a lost node's running run ends
 * ABANDONED without a retry, a stopped node's unclaimed one ABANDONED. */
static void conf_test_every_node(void **state)
{
	conf_ctx *c = *state;
	static const char *const ids[] = {"n1", "n2", "n3"};
	store_node_info ni[3];
	for (int i = 0; i < 3; i++) {
		conf_node(&ni[i], ids[i], "inc", 600000);
		CONF_OK(c, store_node_register(c->s, &ni[i], &c->err));
	}
	int64_t now = conf_now(c);
	dbcron_job j;
	conf_job(&j, "every", now - 100);
	j.on_every_node = true;
	CONF_OK(c, conf_upsert(c, &j, 1));
	dbcron_job_clear(&j);
	conf_put(c, 1, "plain", now - 100);

	conf_planner p = {.stop = -1, .step = 60000};
	store_claim_result r;
	CONF_OK(c, conf_claim(c, c->s, "n2", "t2", 10, &p, &r));
	assert_int_equal(r.nruns, 2);
	for (size_t i = 0; i < r.nruns; i++) {
		const dbcron_run *run = &r.runs[i].run;
		bool every = strcmp(run->job_name, "every") == 0;
		assert_int_equal(run->node_total, every ? 3 : 0);
		assert_int_equal(run->node_index, every ? 1 : 0);
		if (every)
			assert_string_equal(run->for_node, "n2");
		else
			assert_null(run->for_node);
	}
	store_claim_result_clear(&r);
	conf_runs rs = {0};
	conf_every_runs(c, "every", 3, ids, &rs);
	for (int i = 0; i < rs.n; i++) /* n2's claimed, the others waiting */
		if (rs.rows[i].node_index == 1)
			assert_string_equal(rs.rows[i].node, "n2");
		else
			assert_null(rs.rows[i].node);
	conf_list(c, "plain0000", 0, -1, 0, &rs);
	assert_int_equal(rs.n, 1);
	assert_int_equal(rs.rows[0].node_total, 0);
	conf_runs_clear(&rs);

	/* a node that joins now has no run of that fire; n2 takes nothing
	 * more; n3 takes its own run only */
	store_node_info late;
	conf_node(&late, "n0", "inc", 600000);
	CONF_OK(c, store_node_register(c->s, &late, &c->err));
	CONF_OK(c, conf_claim(c, c->s, "n0", "t0", 10, &p, &r));
	assert_int_equal(r.nruns, 0);
	store_claim_result_clear(&r);
	CONF_OK(c, conf_claim(c, c->s, "n2", "t2b", 10, &p, &r));
	assert_int_equal(r.nruns, 0);
	store_claim_result_clear(&r);
	CONF_OK(c, conf_claim(c, c->s, "n3", "t3", 10, &p, &r));
	assert_int_equal(r.nruns, 1);
	assert_int_equal(r.runs[0].run.node_index, 2);
	assert_int_equal(r.runs[0].run.node_total, 3);
	assert_string_equal(r.runs[0].run.for_node, "n3");
	store_update u = conf_update(&r.runs[0], DBCRON_RUN_RUNNING);
	u.started_ms = now;
	CONF_OK(c, store_apply(c->s, "n3", &u, 1, &c->err));
	assert_true(u.applied);
	store_claim_result_clear(&r);

	/* n3 is lost while running (the job retries on node loss): abandoned,
	 * no attempt 2; n1 stops: its unclaimed run is abandoned too */
	int64_t dbnow;
	size_t reaped = 0;
	CONF_OK(c, store_node_heartbeat(c->s, "n3", "inc", 1, &dbnow, &c->err));
	conf_sleep_ms(20);
	CONF_OK(c, store_reap(c->s, &reaped, &c->err));
	assert_true(reaped >= 1);
	CONF_OK(c, store_node_stop(c->s, "n1", "inc", &c->err));
	conf_every_runs(c, "every", 3, ids, &rs);
	for (int i = 0; i < rs.n; i++) {
		const dbcron_run *run = &rs.rows[i];
		if (run->node_index == 1) {
			assert_int_equal(run->state, DBCRON_RUN_SCHEDULED);
			continue;
		}
		assert_int_equal(run->state, DBCRON_RUN_ABANDONED);
		assert_non_null(run->error);
		if (run->node_index == 0)
			assert_non_null(strstr(run->error, "not moved to another node"));
	}
	conf_runs_clear(&rs);
	/* nobody else may take the lost nodes' runs */
	CONF_OK(c, conf_claim(c, c->s, "n0", "t0b", 10, &p, &r));
	assert_int_equal(r.nruns, 0);
	store_claim_result_clear(&r);
}

typedef struct conf_nodes {
	int n;
	char state[4][16];
	char id[4][32];
	int64_t running[4];
} conf_nodes;

static int conf_node_cb(void *ctx, const store_node_row *r)
{
	conf_nodes *ns = ctx;
	if (ns->n < 4) {
		snprintf(ns->id[ns->n], sizeof(ns->id[0]), "%s", r->node_id);
		snprintf(ns->state[ns->n], sizeof(ns->state[0]), "%s", r->state);
		ns->running[ns->n] = r->running;
		ns->n++;
	}
	return 0;
}

/*
 * Node A claims two fires, starts one, then freezes past its lease.
 * B reaps: A dead; the unstarted fire back in the pool, the running one
 * ABANDONED with a new attempt; A's late writes and heartbeat refused.
 */
/* The runs of job `name`: a first attempt ended ABANDONED because its lost
 * node may have started it, and an unclaimed second attempt. */
static void conf_assert_unwritten_retried(conf_ctx *c, const char *name)
{
	conf_runs rs = {0};
	conf_list(c, name, 0, -1, 0, &rs);
	assert_int_equal(rs.n, 2);
	assert_int_equal(rs.rows[0].state, DBCRON_RUN_ABANDONED);
	assert_string_equal(rs.rows[0].error, "node lost before its start was written");
	assert_int_equal(rs.rows[1].attempt, 2);
	assert_int_equal(rs.rows[1].state, DBCRON_RUN_SCHEDULED);
	assert_null(rs.rows[1].node);
	assert_null(rs.rows[1].claim_token);
	conf_runs_clear(&rs);
}

static void conf_test_reap(void **state)
{
	conf_ctx *c = *state;
	store *sb;
	int64_t now = conf_now(c);
	conf_put(c, 2, "rp", now - 100);
	assert_int_equal(conf_open(c, &sb), 0);

	store_node_info na, nb;
	/* A's lease is long while the first reap must leave it be, however
	 * slow the machine; then a heartbeat makes it end a moment later. */
	conf_node(&na, "A", "inc-a", 60000);
	conf_node(&nb, "B", "inc-b", 60000);
	CONF_OK(c, store_node_register(c->s, &na, &c->err));
	CONF_OK(c, store_node_register(sb, &nb, &c->err));

	/* the next fires a minute on: none comes due while the test runs */
	conf_planner p = {.stop = -1, .step = 60000};
	store_claim_result r;
	CONF_OK(c, conf_claim(c, c->s, "A", "ta", 10, &p, &r));
	assert_int_equal(r.nruns, 2);
	store_update u = conf_update(&r.runs[0], DBCRON_RUN_RUNNING);
	u.started_ms = now;
	CONF_OK(c, store_apply(c->s, "A", &u, 1, &c->err));
	assert_true(u.applied);

	conf_nodes ns = {0};
	CONF_OK(c, store_nodes_list(c->s, conf_node_cb, &ns, &c->err));
	assert_int_equal(ns.n, 2);
	assert_string_equal(ns.id[0], "A");
	assert_int_equal(ns.running[0], 1);
	bool running = false;
	CONF_OK(c, store_job_running(c->s, r.runs[0].run.job_id, -1, &running, &c->err));
	assert_true(running);
	CONF_OK(c, store_job_running(c->s, r.runs[0].run.job_id, r.runs[0].run.id, &running,
				  &c->err));
	assert_false(running);

	size_t reaped = 99;
	CONF_OK(c, store_reap(sb, &reaped, &c->err));
	assert_int_equal(reaped, 0); /* A's lease still runs */
	int64_t dbnow;
	CONF_OK(c, store_node_heartbeat(c->s, "A", "inc-a", 1, &dbnow, &c->err));
	conf_sleep_ms(20);
	CONF_OK(c, store_reap(sb, &reaped, &c->err));
	assert_int_equal(reaped, 2);

	conf_runs rs = {0};
	conf_list(c, r.runs[0].run.job_name, 0, -1, 0, &rs);
	assert_int_equal(rs.n, 2);
	assert_int_equal(rs.rows[0].state, DBCRON_RUN_ABANDONED);
	assert_string_equal(rs.rows[0].error, "node lost");
	assert_true(rs.rows[0].finished_ms >= now);
	assert_int_equal(rs.rows[1].attempt, 2);
	assert_int_equal(rs.rows[1].state, DBCRON_RUN_SCHEDULED);
	assert_null(rs.rows[1].node);
	conf_runs_clear(&rs);
	/* The other was claimed, due before A's lease ended and never
	 * written RUNNING: it may have started, so it is abandoned too. */
	conf_assert_unwritten_retried(c, r.runs[1].run.job_name);

	/* A wakes up: its heartbeat and its writes are fenced. */
	assert_int_equal(store_node_heartbeat(c->s, "A", "inc-a", 200, &dbnow, &c->err),
			 DBCRON_EFENCED);
	store_update late[2] = {conf_update(&r.runs[0], DBCRON_RUN_SUCCEEDED),
				conf_update(&r.runs[1], DBCRON_RUN_RUNNING)};
	CONF_OK(c, store_apply(c->s, "A", late, 2, &c->err));
	assert_false(late[0].applied);
	assert_false(late[1].applied);

	/* B takes both retries. */
	store_claim_result rb;
	p.stop = 0;
	CONF_OK(c, conf_claim(c, sb, "B", "tb", 10, &p, &rb));
	assert_int_equal(rb.nruns, 2);
	store_claim_result_clear(&rb);
	CONF_OK(c, store_node_heartbeat(sb, "B", "inc-b", 60000, &dbnow, &c->err));
	assert_true(dbnow >= now);

	ns.n = 0;
	CONF_OK(c, store_nodes_list(c->s, conf_node_cb, &ns, &c->err));
	assert_string_equal(ns.state[0], "dead");
	assert_string_equal(ns.state[1], "alive");
	store_claim_result_clear(&r);
	store_close(sb);
}

/* ---- cancel (issue 27 item 3) ---- */

typedef struct conf_ids {
	int64_t id[8];
	size_t n;
} conf_ids;

static int conf_id_cb(void *ctx, int64_t id)
{
	conf_ids *ids = ctx;
	if (ids->n < 8)
		ids->id[ids->n++] = id;
	return 0;
}

static bool conf_has_id(const conf_ids *ids, int64_t id)
{
	for (size_t i = 0; i < ids->n; i++)
		if (ids->id[i] == id)
			return true;
	return false;
}

/* An unclaimed run ends CANCELLED at once; a claimed one gets a request
 * its node's poll finds (and no other node's); an ended or unknown run is
 * refused; a run handed back after its request is never claimed again and
 * ends at the next poll. */
static void conf_test_run_cancel(void **state)
{
	conf_ctx *c = *state;
	int64_t now = conf_now(c), id, r0, r1, fire_at, freed = -1;
	bool done = true;
	dbcron_run run;
	conf_put(c, 2, "cx", now + 60000); /* only triggers come due */

	assert_int_equal(store_run_cancel(c->s, 424242, &done, NULL, &c->err), DBCRON_ENOTFOUND);
	CONF_OK(c, store_job_trigger(c->s, "cx0000", &id, &fire_at, &c->err));
	CONF_OK(c, store_run_cancel(c->s, id, &done, &run, &c->err));
	assert_true(done);
	assert_int_equal(run.state, DBCRON_RUN_CANCELLED);
	assert_string_equal(run.error, "cancelled before it started");
	assert_true(run.cancel_requested_ms >= now);
	dbcron_run_clear(&run);
	assert_int_equal(store_run_cancel(c->s, id, &done, NULL, &c->err), DBCRON_EEXISTS);
	assert_non_null(strstr(c->err.msg, "already ended (cancelled)"));

	store_node_info na;
	conf_node(&na, "A", "inc-a", 60000);
	CONF_OK(c, store_node_register(c->s, &na, &c->err));
	CONF_OK(c, store_job_trigger(c->s, "cx0000", &r0, &fire_at, &c->err));
	CONF_OK(c, store_job_trigger(c->s, "cx0001", &r1, &fire_at, &c->err));
	conf_planner p = {.stop = -1, .step = 60000};
	store_claim_result r;
	CONF_OK(c, conf_claim(c, c->s, "A", "ta", 10, &p, &r));
	assert_int_equal(r.nruns, 2);
	const store_claimed *c0 = r.runs[0].run.id == r0 ? &r.runs[0] : &r.runs[1];
	const store_claimed *c1 = c0 == &r.runs[0] ? &r.runs[1] : &r.runs[0];
	assert_int_equal(c1->run.id, r1);
	store_update u = conf_update(c0, DBCRON_RUN_RUNNING);
	u.started_ms = now;
	CONF_OK(c, store_apply(c->s, "A", &u, 1, &c->err));
	assert_true(u.applied);

	/* running and claimed: asked of A, the first time kept */
	CONF_OK(c, store_run_cancel(c->s, r0, &done, &run, &c->err));
	assert_false(done);
	assert_int_equal(run.state, DBCRON_RUN_RUNNING);
	int64_t asked = run.cancel_requested_ms;
	assert_true(asked >= now);
	dbcron_run_clear(&run);
	conf_sleep_ms(5);
	CONF_OK(c, store_run_cancel(c->s, r0, &done, &run, &c->err));
	assert_false(done);
	assert_int_equal(run.cancel_requested_ms, asked);
	dbcron_run_clear(&run);
	CONF_OK(c, store_run_cancel(c->s, r1, &done, NULL, &c->err));
	assert_false(done);

	conf_ids ids = {0};
	CONF_OK(c, store_runs_cancel_asked(c->s, "A", conf_id_cb, &ids, &freed, &c->err));
	assert_int_equal(freed, 0);
	assert_int_equal(ids.n, 2);
	assert_true(conf_has_id(&ids, r0) && conf_has_id(&ids, r1));
	ids.n = 0;
	CONF_OK(c, store_runs_cancel_asked(c->s, "B", conf_id_cb, &ids, &freed, &c->err));
	assert_int_equal(ids.n, 0);

	/* A ends r0 CANCELLED under its claim, hands r1 back */
	store_update e = conf_update(c0, DBCRON_RUN_CANCELLED);
	e.finished_ms = now;
	CONF_OK(c, store_apply(c->s, "A", &e, 1, &c->err));
	assert_true(e.applied);
	const char *tok = c1->run.claim_token;
	CONF_OK(c, store_runs_release(c->s, "A", &c1->run.id, &tok, 1, &c->err));
	store_claim_result rb;
	CONF_OK(c, conf_claim(c, c->s, "B", "tb", 10, &p, &rb));
	assert_int_equal(rb.nruns, 0); /* a run asked to cancel is never claimed */
	store_claim_result_clear(&rb);
	CONF_OK(c, store_runs_cancel_asked(c->s, "B", conf_id_cb, &ids, &freed, &c->err));
	assert_int_equal(freed, 1);
	assert_int_equal(ids.n, 0);
	CONF_OK(c, store_run_get(c->s, r1, &run, &c->err));
	assert_int_equal(run.state, DBCRON_RUN_CANCELLED);
	assert_null(run.node);
	dbcron_run_clear(&run);
	CONF_OK(c, store_runs_cancel_asked(c->s, "A", conf_id_cb, &ids, &freed, &c->err));
	assert_int_equal(ids.n, 0);
	assert_int_equal(freed, 0);

	/* no retry of either */
	conf_runs rs = {0};
	conf_list(c, "cx0001", 0, -1, 0, &rs);
	assert_int_equal(rs.n, 1);
	conf_list(c, "cx0000", 0, -1, 0, &rs);
	assert_int_equal(rs.n, 2); /* the first trigger and r0 */
	conf_runs_clear(&rs);
	store_claim_result_clear(&r);
}

/* A node lost while holding a run with a cancel request: the reap ends it
 * CANCELLED, with no new attempt, where it would abandon and retry it. */
static void conf_test_reap_cancelled(void **state)
{
	conf_ctx *c = *state;
	store *sb;
	int64_t now = conf_now(c), id, fire_at, dbnow;
	bool done = true;
	conf_put(c, 1, "rc", now + 60000);
	assert_int_equal(conf_open(c, &sb), 0);
	store_node_info na, nb;
	conf_node(&na, "A", "inc-a", 60000);
	conf_node(&nb, "B", "inc-b", 60000);
	CONF_OK(c, store_node_register(c->s, &na, &c->err));
	CONF_OK(c, store_node_register(sb, &nb, &c->err));
	CONF_OK(c, store_job_trigger(c->s, "rc0000", &id, &fire_at, &c->err));
	conf_planner p = {.stop = -1, .step = 60000};
	store_claim_result r;
	CONF_OK(c, conf_claim(c, c->s, "A", "ta", 10, &p, &r));
	assert_int_equal(r.nruns, 1);
	store_update u = conf_update(&r.runs[0], DBCRON_RUN_RUNNING);
	u.started_ms = now;
	CONF_OK(c, store_apply(c->s, "A", &u, 1, &c->err));
	CONF_OK(c, store_run_cancel(sb, id, &done, NULL, &c->err));
	assert_false(done);

	CONF_OK(c, store_node_heartbeat(c->s, "A", "inc-a", 1, &dbnow, &c->err));
	conf_sleep_ms(20);
	size_t reaped = 0;
	CONF_OK(c, store_reap(sb, &reaped, &c->err));
	assert_int_equal(reaped, 1);
	conf_runs rs = {0};
	conf_list(c, "rc0000", 0, -1, 0, &rs);
	assert_int_equal(rs.n, 1);
	assert_int_equal(rs.rows[0].state, DBCRON_RUN_CANCELLED);
	assert_string_equal(rs.rows[0].error, "cancelled; its node was lost");
	conf_runs_clear(&rs);
	store_claim_result_clear(&r);
	store_close(sb);
}

/* Parameters: a trigger writes them on its run, the claim hands them to
 * the node, a retry keeps them, a run without any has none. */
static void conf_test_trigger_params(void **state)
{
	conf_ctx *c = *state;
	int64_t now = conf_now(c), id, plain, fire_at;
	conf_put(c, 1, "tp", now + 60000);
	CONF_OK(c, store_job_trigger_params(c->s, "tp0000", "{\"X\":\"a b\"}", &id, &fire_at,
					    &c->err));
	CONF_OK(c, store_job_trigger(c->s, "tp0000", &plain, &fire_at, &c->err));
	dbcron_run run;
	CONF_OK(c, store_run_get(c->s, id, &run, &c->err));
	assert_string_equal(run.params, "{\"X\":\"a b\"}");
	assert_true(run.cancel_requested_ms <= 0);
	dbcron_run_clear(&run);
	conf_planner p = {.stop = -1, .step = 60000};
	store_claim_result r;
	/* two triggers in one millisecond: the second's fire time is bumped
	 * a millisecond on, past a claim in that same millisecond (horizon 0;
	 * CI saw 1 run of 2) */
	conf_sleep_ms(5);
	CONF_OK(c, conf_claim(c, c->s, "A", "ta", 10, &p, &r));
	assert_int_equal(r.nruns, 2);
	const store_claimed *cp = r.runs[0].run.id == id ? &r.runs[0] : &r.runs[1];
	const store_claimed *cn = cp == &r.runs[0] ? &r.runs[1] : &r.runs[0];
	assert_string_equal(cp->run.params, "{\"X\":\"a b\"}");
	assert_null(cn->run.params);
	store_update u = conf_update(cp, DBCRON_RUN_FAILED);
	u.finished_ms = now;
	u.retry_due_at = now;
	CONF_OK(c, store_apply(c->s, "A", &u, 1, &c->err));
	assert_true(u.applied);
	conf_runs rs = {0};
	conf_list(c, "tp0000", 0, -1, 0, &rs);
	assert_int_equal(rs.n, 3);
	size_t retries = 0;
	for (int i = 0; i < rs.n; i++)
		if (rs.rows[i].attempt == 2) {
			retries++;
			assert_string_equal(rs.rows[i].params, "{\"X\":\"a b\"}");
		}
	assert_int_equal(retries, 1);
	conf_runs_clear(&rs);
	store_claim_result_clear(&r);
}

static void conf_test_node_register_resolves(void **state)
{
	conf_ctx *c = *state;
	int64_t now = conf_now(c);
	conf_put(c, 2, "nr", now - 100);
	/* The second job abandons on node loss: no new attempt. */
	dbcron_job j;
	CONF_OK(c, store_job_get(c->s, "nr0001", &j, &c->err));
	j.node_loss = DBCRON_NODE_LOSS_ABANDON;
	CONF_OK(c, conf_upsert(c, &j, 1));
	dbcron_job_clear(&j);

	store_node_info n;
	conf_node(&n, "N", "first", 300);
	CONF_OK(c, store_node_register(c->s, &n, &c->err));
	CONF_OK(c, store_node_register(c->s, &n, &c->err)); /* itself again: fine */
	conf_planner p = {.stop = -1};
	store_claim_result r;
	CONF_OK(c, conf_claim(c, c->s, "N", "t1", 10, &p, &r));
	assert_int_equal(r.nruns, 2);
	store_update u[2] = {conf_update(&r.runs[0], DBCRON_RUN_RUNNING),
			     conf_update(&r.runs[1], DBCRON_RUN_RUNNING)};
	CONF_OK(c, store_apply(c->s, "N", u, 2, &c->err));

	/* A second process under the same id is refused while the first
	 * one's lease is alive, and nothing is touched. */
	n.incarnation = "second";
	n.lease_ms = 60000;
	assert_int_equal(store_node_register(c->s, &n, &c->err), DBCRON_EEXISTS);
	assert_non_null(strstr(c->err.msg, "node id 'N' is in use by a live node (host testhost, pid 42"));
	conf_runs before = {0};
	conf_list(c, NULL, 0, -1, 0, &before);
	assert_int_equal(before.n, 2);
	for (int i = 0; i < before.n; i++)
		assert_int_equal(before.rows[i].state, DBCRON_RUN_RUNNING);
	conf_runs_clear(&before);

	/* Once that lease lapses (the first process died), the restart goes
	 * through and resolves the orphans. */
	conf_sleep_ms(450);
	CONF_OK(c, store_node_register(c->s, &n, &c->err));
	conf_runs rs = {0};
	conf_list(c, NULL, 0, -1, 0, &rs);
	int abandoned = 0, scheduled = 0;
	for (int i = 0; i < rs.n; i++) {
		if (rs.rows[i].state == DBCRON_RUN_ABANDONED)
			abandoned++;
		if (rs.rows[i].state == DBCRON_RUN_SCHEDULED) {
			scheduled++;
			assert_string_equal(rs.rows[i].job_name, "nr0000");
			assert_int_equal(rs.rows[i].attempt, 2);
		}
	}
	assert_int_equal(abandoned, 2);
	assert_int_equal(scheduled, 1);
	conf_runs_clear(&rs);
	/* The old incarnation is fenced, the new one is not. */
	int64_t dbnow;
	assert_int_equal(store_node_heartbeat(c->s, "N", "first", 60000, &dbnow, &c->err),
			 DBCRON_EFENCED);
	CONF_OK(c, store_node_heartbeat(c->s, "N", "second", 60000, &dbnow, &c->err));
	store_claim_result_clear(&r);
}

/* A lost node's claimed runs that were never written RUNNING: one due
 * before its lease ended may have started (the write goes out after the
 * start), one due after never did.  Retry owes the first a new attempt even
 * with no retries left; abandon (at-most-once) leaves it abandoned; the
 * last goes back to the pool as attempt 1. */
static void conf_test_reap_unwritten_starts(void **state)
{
	conf_ctx *c = *state;
	store *sb;
	int64_t now = conf_now(c);
	dbcron_job j[4];
	conf_job(&j[0], "ua", now - 100);
	j[0].max_retries = 1;
	conf_job(&j[1], "ub", now - 100);
	j[1].node_loss = DBCRON_NODE_LOSS_ABANDON;
	conf_job(&j[2], "uc", now + 3000);
	/* the budget holds for an unwritten start too (issue 23: a handler
	 * that crashed its node at once was retried whatever its limit) */
	conf_job(&j[3], "ud", now - 100);
	j[3].max_retries = 0;
	CONF_OK(c, conf_upsert(c, j, 4));
	for (int i = 0; i < 4; i++)
		dbcron_job_clear(&j[i]);
	assert_int_equal(conf_open(c, &sb), 0);
	store_node_info nl;
	conf_node(&nl, "L", "inc-l", 300);
	CONF_OK(c, store_node_register(c->s, &nl, &c->err));
	conf_planner p = {.stop = 0};
	store_claim_req req = {.node_id = "L", .token = "tl", .horizon_ms_ahead = 5000,
			       .max = 10, .plan = conf_plan, .plan_ctx = &p};
	store_claim_result r;
	CONF_OK(c, store_claim(c->s, &req, &r, &c->err));
	assert_int_equal(r.nruns, 4);
	store_claim_result_clear(&r);

	conf_sleep_ms(450);
	size_t reaped = 0;
	CONF_OK(c, store_reap(sb, &reaped, &c->err));
	assert_int_equal(reaped, 4);
	conf_assert_unwritten_retried(c, "ua");
	conf_runs rs = {0};
	conf_list(c, "ud", 0, -1, 0, &rs);
	assert_int_equal(rs.n, 1);
	assert_int_equal(rs.rows[0].state, DBCRON_RUN_ABANDONED);
	assert_string_equal(rs.rows[0].error, "node lost before its start was written");
	conf_list(c, "ub", 0, -1, 0, &rs);
	assert_int_equal(rs.n, 1);
	assert_int_equal(rs.rows[0].state, DBCRON_RUN_ABANDONED);
	conf_list(c, "uc", 0, -1, 0, &rs);
	assert_int_equal(rs.n, 1);
	assert_int_equal(rs.rows[0].attempt, 1);
	assert_int_equal(rs.rows[0].state, DBCRON_RUN_SCHEDULED);
	assert_null(rs.rows[0].node);
	assert_null(rs.rows[0].claim_token);
	conf_runs_clear(&rs);
	store_close(sb);
}

/* The node-loss retry budget at its boundary (conf_test_reap runs with the
 * default of 3 retries and never reaches it): a job with one retry whose
 * RUNNING attempt 1 is lost with its node gets attempt 2; when attempt 2 is
 * lost too the budget is spent, and the fire ends there. */
static void conf_test_reap_retry_budget(void **state)
{
	conf_ctx *c = *state;
	store *sb;
	int64_t now = conf_now(c);
	dbcron_job j;
	conf_job(&j, "budget", now - 100);
	j.max_retries = 1;
	CONF_OK(c, conf_upsert(c, &j, 1));
	dbcron_job_clear(&j);
	assert_int_equal(conf_open(c, &sb), 0);
	store_node_info nb;
	conf_node(&nb, "B", "inc-b", 60000);
	CONF_OK(c, store_node_register(sb, &nb, &c->err));
	conf_planner p = {.stop = now}; /* the job fires once */
	const char *lost[2] = {"L1", "L2"};
	for (int k = 0; k < 2; k++) {
		store_node_info nl;
		conf_node(&nl, lost[k], "inc", 300);
		CONF_OK(c, store_node_register(c->s, &nl, &c->err));
		store_claim_result r;
		CONF_OK(c, conf_claim(c, c->s, lost[k], lost[k], 10, &p, &r));
		assert_int_equal(r.nruns, 1);
		assert_int_equal(r.runs[0].run.attempt, k + 1);
		store_update u = conf_update(&r.runs[0], DBCRON_RUN_RUNNING);
		u.started_ms = now;
		CONF_OK(c, store_apply(c->s, lost[k], &u, 1, &c->err));
		assert_true(u.applied);
		store_claim_result_clear(&r);
		conf_sleep_ms(450); /* its lease (300 ms) lapses */
		size_t reaped = 0;
		CONF_OK(c, store_reap(sb, &reaped, &c->err));
		assert_int_equal(reaped, 1);
	}
	conf_runs rs = {0};
	conf_list(c, "budget", 0, -1, 0, &rs);
	assert_int_equal(rs.n, 2);
	for (int k = 0; k < 2; k++) {
		assert_int_equal(rs.rows[k].attempt, k + 1);
		assert_int_equal(rs.rows[k].state, DBCRON_RUN_ABANDONED);
		assert_string_equal(rs.rows[k].error, "node lost");
	}
	conf_runs_clear(&rs);
	store_close(sb);
}

/* A start write in flight while its node is reaped. */
struct conf_racing_start {
	store *s;
	store_update u;
	int rc;
	dbcron_err err;
};

static void *conf_racing_start_main(void *arg)
{
	struct conf_racing_start *a = arg;
	a->rc = store_apply(a->s, "R", &a->u, 1, &a->err);
	return NULL;
}

/* A run moving SCHEDULED -> RUNNING while a reaper resolves its node: the
 * start's transaction holds the row (its COMMIT stalled by the fault seam)
 * when the reap reaches it.  However the two interleave, the run must end
 * resolved: a reap that reads the row as SCHEDULED, then finds it RUNNING
 * after the lock wait, must still abandon it, never leave it RUNNING under a
 * dead node. */
static void conf_test_reap_racing_start(void **state)
{
	conf_ctx *c = *state;
	int64_t now = conf_now(c);
	dbcron_job j;
	conf_job(&j, "race", now - 100);
	j.max_retries = 0;
	CONF_OK(c, conf_upsert(c, &j, 1));
	dbcron_job_clear(&j);
	struct conf_racing_start a = {0};
	assert_int_equal(conf_open(c, &a.s), 0);
	store_node_info nr;
	conf_node(&nr, "R", "inc-r", 300);
	CONF_OK(c, store_node_register(a.s, &nr, &c->err));
	conf_planner p = {.stop = now};
	store_claim_result r;
	CONF_OK(c, conf_claim(c, a.s, "R", "tr", 10, &p, &r));
	assert_int_equal(r.nruns, 1);
	a.u = conf_update(&r.runs[0], DBCRON_RUN_RUNNING);
	a.u.started_ms = now;
	a.u.job_next_fire_at = now + 60000; /* a follow-up: its own transaction */
	conf_sleep_ms(400);                   /* R's lease has ended */
	store_fault f = {.stmt = ST_COMMIT, .nth = 1, .times = 1,
			 .kind = STORE_FAULT_STALL, .stall_ms = 1500};
	CONF_OK(c, store_fault_add(a.s, &f, &c->err));
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, conf_racing_start_main, &a), 0);
	conf_sleep_ms(300); /* the start's UPDATE holds the row */
	size_t reaped = 0;
	CONF_OK(c, store_reap(c->s, &reaped, &c->err));
	pthread_join(th, NULL);
	if (a.rc)
		fail_msg("start write: %s", a.err.msg);
	assert_true(a.u.applied);
	assert_int_equal(store_fault_hits(a.s), 1);
	assert_int_equal(reaped, 1);
	conf_runs rs = {0};
	conf_list(c, "race", 0, -1, 0, &rs);
	assert_int_equal(rs.n, 1);
	assert_int_equal(rs.rows[0].state, DBCRON_RUN_ABANDONED);
	assert_string_equal(rs.rows[0].error, "node lost");
	conf_runs_clear(&rs);
	store_claim_result_clear(&r);
	store_close(a.s);
}

/* A lock-row claim in flight (its COMMIT stalled by the fault seam). */
struct conf_lockrow_claim {
	store *s;
	conf_planner p;
	store_claim_result r;
	int rc;
	dbcron_err err;
};

static void *conf_lockrow_main(void *arg)
{
	struct conf_lockrow_claim *a = arg;
	store_claim_req req = {.node_id = "A", .token = "ta", .horizon_ms_ahead = 0, .max = 100,
			       .plan = conf_plan, .plan_ctx = &a->p, .lock_row = true};
	a->rc = store_claim(a->s, &req, &a->r, &a->err);
	return NULL;
}

static double conf_ts_ms(const struct timespec *t)
{
	return (double)t->tv_sec * 1000.0 + (double)t->tv_nsec / 1e6;
}

/* XXL-JOB's schedule lock: a lock-row claim holds the row dbcron:schedule
 * until it commits, so a second one waits for it (where the per-row claim
 * would go on beside it), and together they take each due fire once. */
static void conf_test_claim_lock_row(void **state)
{
	conf_ctx *c = *state;
	int64_t now = conf_now(c);
	conf_put(c, 6, "lr", now - 100);
	struct conf_lockrow_claim a = {.p = {.stop = now}};
	assert_int_equal(conf_open(c, &a.s), 0);
	store_fault f = {.stmt = ST_COMMIT, .nth = 1, .times = 1,
			 .kind = STORE_FAULT_STALL, .stall_ms = 1000};
	CONF_OK(c, store_fault_add(a.s, &f, &c->err));
	pthread_t th;
	struct timespec a_start;
	clock_gettime(CLOCK_MONOTONIC, &a_start);
	assert_int_equal(pthread_create(&th, NULL, conf_lockrow_main, &a), 0);
	/* until A sits in its stalled COMMIT, holding the lock row (however
	 * slow the machine: the stall is the 1 s after the hit) */
	for (int i = 0; i < 1000 && store_fault_hits(a.s) < 1; i++)
		conf_sleep_ms(10);
	conf_planner p = {.stop = now};
	store_claim_req req = {.node_id = "B", .token = "tb", .horizon_ms_ahead = 0, .max = 100,
			       .plan = conf_plan, .plan_ctx = &p, .lock_row = true};
	store_claim_result r;
	CONF_OK(c, store_claim(c->s, &req, &r, &c->err));
	struct timespec b_done;
	clock_gettime(CLOCK_MONOTONIC, &b_done);
	pthread_join(th, NULL);
	if (a.rc)
		fail_msg("claim A: %s", a.err.msg);
	assert_int_equal(store_fault_hits(a.s), 1);
	/* B could only go on once A's COMMIT was sent, which the stall holds
	 * back for 1 s after A started; not "after A's claim returned": A's
	 * thread may still be on its way out when B is done.  A slow machine
	 * only makes B later, so this bound cannot fail for want of speed. */
	double waited = conf_ts_ms(&b_done) - conf_ts_ms(&a_start);
	print_message("lock-row claim B returned %.1f ms after A started\n", waited);
	assert_true(waited >= 1000.0);
	assert_int_equal(a.r.nruns + r.nruns, 6);
	assert_int_equal(a.r.nruns, 6); /* A saw every fire first; B found none left */
	store_claim_result_clear(&a.r);
	store_claim_result_clear(&r);
	store_close(a.s);
}

/* A pre-claimed fire of `name` (due in 30 s) held by node `id`. */
static void conf_preclaim(conf_ctx *c, const char *id, const char *name, int64_t *run_id,
			  char *token, size_t toklen)
{
	int64_t now = conf_now(c);
	dbcron_job j;
	conf_job(&j, name, now + 30000);
	CONF_OK(c, conf_upsert(c, &j, 1));
	dbcron_job_clear(&j);
	conf_planner p = {.stop = -1};
	snprintf(token, toklen, "tok-%s", id);
	store_claim_req req = {.node_id = id, .token = token, .horizon_ms_ahead = 60000,
			       .max = 10, .plan = conf_plan, .plan_ctx = &p};
	store_claim_result r;
	CONF_OK(c, store_claim(c->s, &req, &r, &c->err));
	assert_int_equal(r.nruns, 1);
	*run_id = r.runs[0].run.id;
	store_claim_result_clear(&r);
}

static void conf_assert_closed_deleted(conf_ctx *c, int64_t run_id, const char *how)
{
	dbcron_run run;
	CONF_OK(c, store_run_get(c->s, run_id, &run, &c->err));
	if (run.state != DBCRON_RUN_ABANDONED || !run.error || strcmp(run.error, "job deleted"))
		fail_msg("%s: run %lld is %s (%s), want abandoned (job deleted)", how,
			 (long long)run_id, dbcron_run_state_name(run.state),
			 run.error ? run.error : "no error");
	dbcron_run_clear(&run);
}

/* A job deleted while a node held its pre-claimed fires (issue 23 item 4):
 * whatever hands them back (the reap of the dead node, the node id
 * registered again, a graceful stop, a hand-back) ends them ABANDONED "job
 * deleted" instead of leaving them SCHEDULED for a claim that cannot take
 * them; maintenance closes any left so by other paths. */
static void conf_test_deleted_job_preclaimed(void **state)
{
	conf_ctx *c = *state;
	store_node_info ni;
	int64_t run_id;
	char tok[64];

	/* 1. the holder dies: reaped after its lease */
	conf_node(&ni, "dead", "inc-1", 200);
	CONF_OK(c, store_node_register(c->s, &ni, &c->err));
	conf_preclaim(c, "dead", "del-reap", &run_id, tok, sizeof(tok));
	CONF_OK(c, store_job_delete(c->s, "del-reap", &c->err));
	conf_sleep_ms(400);
	size_t reaped = 0;
	CONF_OK(c, store_reap(c->s, &reaped, &c->err));
	assert_true(reaped >= 1);
	conf_assert_closed_deleted(c, run_id, "reap");

	/* 2. the holder's id registers again after its lease lapsed */
	conf_node(&ni, "again", "inc-1", 200);
	CONF_OK(c, store_node_register(c->s, &ni, &c->err));
	conf_preclaim(c, "again", "del-rereg", &run_id, tok, sizeof(tok));
	CONF_OK(c, store_job_delete(c->s, "del-rereg", &c->err));
	conf_sleep_ms(400);
	conf_node(&ni, "again", "inc-2", 60000);
	CONF_OK(c, store_node_register(c->s, &ni, &c->err));
	conf_assert_closed_deleted(c, run_id, "register again");

	/* 3. a graceful stop racing the delete */
	conf_node(&ni, "stopper", "inc-1", 60000);
	CONF_OK(c, store_node_register(c->s, &ni, &c->err));
	conf_preclaim(c, "stopper", "del-stop", &run_id, tok, sizeof(tok));
	CONF_OK(c, store_job_delete(c->s, "del-stop", &c->err));
	CONF_OK(c, store_node_stop(c->s, "stopper", "inc-1", &c->err));
	conf_assert_closed_deleted(c, run_id, "node stop");

	/* 4. a hand-back of the runs, and of a claim in doubt */
	conf_node(&ni, "hb", "inc-1", 60000);
	CONF_OK(c, store_node_register(c->s, &ni, &c->err));
	conf_preclaim(c, "hb", "del-back", &run_id, tok, sizeof(tok));
	CONF_OK(c, store_job_delete(c->s, "del-back", &c->err));
	const char *toks[] = {tok};
	CONF_OK(c, store_runs_release(c->s, "hb", &run_id, toks, 1, &c->err));
	conf_assert_closed_deleted(c, run_id, "hand-back");
	conf_preclaim(c, "hb", "del-doubt", &run_id, tok, sizeof(tok));
	CONF_OK(c, store_job_delete(c->s, "del-doubt", &c->err));
	size_t released = 0;
	CONF_OK(c, store_runs_release_claim(c->s, "hb", tok, &released, &c->err));
	assert_int_equal(released, 1);
	conf_assert_closed_deleted(c, run_id, "claim in doubt released");
}

static void conf_test_node_stop_release(void **state)
{
	conf_ctx *c = *state;
	int64_t now = conf_now(c);
	conf_put(c, 3, "st", now - 100);
	store_node_info n;
	conf_node(&n, "S", "i1", 60000);
	CONF_OK(c, store_node_register(c->s, &n, &c->err));
	conf_planner p = {.stop = now + 10000};
	store_claim_result r;
	CONF_OK(c, conf_claim(c, c->s, "S", "t1", 10, &p, &r));
	assert_int_equal(r.nruns, 3);

	/* Hand back one by token; a wrong token hands back nothing. */
	int64_t ids[2] = {r.runs[0].run.id, r.runs[1].run.id};
	const char *toks[2] = {"t1", "wrong"};
	CONF_OK(c, store_runs_release(c->s, "S", ids, toks, 2, &c->err));
	conf_runs rs = {0};
	conf_list(c, NULL, DBCRON_RUN_SCHEDULED, -1, 0, &rs);
	int unclaimed = 0;
	for (int i = 0; i < rs.n; i++)
		unclaimed += rs.rows[i].node == NULL;
	assert_int_equal(unclaimed, 1);

	/* Start one: a node that owns a RUNNING run is not stopped (stopped
	 * nodes are not reaped), and nothing changes. */
	store_update u = conf_update(&r.runs[2], DBCRON_RUN_RUNNING);
	CONF_OK(c, store_apply(c->s, "S", &u, 1, &c->err));
	assert_int_equal(store_node_stop(c->s, "S", "i1", &c->err), DBCRON_EBUSY);
	assert_non_null(strstr(c->err.msg, "still owns 1 running run"));
	conf_list(c, NULL, DBCRON_RUN_SCHEDULED, -1, 0, &rs);
	unclaimed = 0;
	for (int i = 0; i < rs.n; i++)
		unclaimed += rs.rows[i].node == NULL;
	assert_int_equal(unclaimed, 1);
	/* Its outcome written, the stop goes through: the unstarted rest is
	 * handed back. */
	u = conf_update(&r.runs[2], DBCRON_RUN_SUCCEEDED);
	u.finished_ms = now;
	CONF_OK(c, store_apply(c->s, "S", &u, 1, &c->err));
	CONF_OK(c, store_node_stop(c->s, "S", "i1", &c->err));
	conf_list(c, NULL, DBCRON_RUN_SCHEDULED, -1, 0, &rs);
	assert_int_equal(rs.n, 2);
	for (int i = 0; i < rs.n; i++)
		assert_null(rs.rows[i].node);
	conf_list(c, NULL, DBCRON_RUN_SUCCEEDED, -1, 0, &rs);
	assert_int_equal(rs.n, 1);
	conf_runs_clear(&rs);
	conf_nodes ns = {0};
	CONF_OK(c, store_nodes_list(c->s, conf_node_cb, &ns, &c->err));
	assert_string_equal(ns.state[0], "stopped");
	int64_t dbnow;
	assert_int_equal(store_node_heartbeat(c->s, "S", "i1", 60000, &dbnow, &c->err),
			 DBCRON_EFENCED);
	store_claim_result_clear(&r);
}

/* ---- views ---- */

static void conf_test_runs_list(void **state)
{
	conf_ctx *c = *state;
	dbcron_run run;
	/* log_run rows: jobs "b" and "a" at fire_at 1000..5000. */
	for (int i = 5; i >= 1; i--)
		for (int k = 0; k < 2; k++) {
			memset(&run, 0, sizeof(run));
			run.job_name = k ? "a" : "b";
			run.job_id = k ? 7 : 8; /* same instant, distinct jobs */
			run.fire_at = i * 1000;
			run.attempt = 1;
			run.state = i == 3 ? DBCRON_RUN_FAILED : DBCRON_RUN_SUCCEEDED;
			run.started_ms = run.fire_at;
			run.finished_ms = run.fire_at + 10;
			run.has_exit_code = true;
			run.exit_code = i == 3;
			CONF_OK(c, store_log_run(c->s, &run, &c->err));
		}
	conf_runs rs = {0};
	conf_list(c, NULL, 0, -1, 0, &rs);
	assert_int_equal(rs.n, 10);
	for (int i = 0; i < 10; i++) {
		assert_int_equal(rs.rows[i].fire_at, (i / 2 + 1) * 1000);
		assert_string_equal(rs.rows[i].job_name, i % 2 ? "b" : "a");
		assert_int_equal(rs.rows[i].job_id, i % 2 ? 8 : 7);
	}
	conf_list(c, "a", 0, -1, 0, &rs);
	assert_int_equal(rs.n, 5);
	conf_list(c, NULL, DBCRON_RUN_FAILED, -1, 0, &rs);
	assert_int_equal(rs.n, 2);
	assert_int_equal(rs.rows[0].exit_code, 1);
	conf_list(c, NULL, 0, 4000, 0, &rs);
	assert_int_equal(rs.n, 4);
	/* limit: the most recent N, still ascending. */
	conf_list(c, "b", 0, -1, 2, &rs);
	assert_int_equal(rs.n, 2);
	assert_int_equal(rs.rows[0].fire_at, 4000);
	assert_int_equal(rs.rows[1].fire_at, 5000);

	/* A second log of the same instant is bumped, not lost. */
	memset(&run, 0, sizeof(run));
	run.job_name = "a";
	run.job_id = 7;
	run.fire_at = 1000;
	run.started_ms = run.finished_ms = -1; /* finished: now */
	run.state = DBCRON_RUN_SKIPPED;
	CONF_OK(c, store_log_run(c->s, &run, &c->err));
	conf_list(c, "a", DBCRON_RUN_SKIPPED, -1, 0, &rs);
	assert_int_equal(rs.n, 1);
	assert_int_equal(rs.rows[0].fire_at, 1001);

	/* prune: terminal runs finished before the cutoff go. */
	int64_t deleted = 0;
	CONF_OK(c, store_prune_runs(c->s, 3005, &deleted, &c->err));
	assert_int_equal(deleted, 4);
	conf_list(c, NULL, 0, -1, 0, &rs);
	assert_int_equal(rs.n, 7);
	assert_int_equal(rs.rows[0].fire_at, 1001);
	conf_runs_clear(&rs);
}

/* store_jobs_last_run: each job's newest run by (fire_at, attempt) that is
 * not SCHEDULED, for a whole page of jobs in one statement. */
typedef struct conf_last {
	int64_t run_id[4]; /* by job index; 0: no call */
	int state[4];
	int64_t finished[4];
	int64_t ids[4];
	int calls;
} conf_last;

static int conf_last_one(void *ctx, const store_last_run *r)
{
	conf_last *l = ctx;
	l->calls++;
	for (int i = 0; i < 4; i++)
		if (l->ids[i] == r->job_id) {
			assert_int_equal(l->run_id[i], 0); /* once per job */
			l->run_id[i] = r->run_id;
			l->state[i] = r->state;
			l->finished[i] = r->finished_ms;
		}
	return 0;
}

static int64_t conf_log(conf_ctx *c, int64_t job_id, int64_t fire_at, int attempt, int state,
			int64_t finished)
{
	dbcron_run run;
	memset(&run, 0, sizeof(run));
	run.job_name = "last";
	run.job_id = job_id;
	run.fire_at = fire_at;
	run.attempt = attempt;
	run.state = state;
	run.started_ms = fire_at;
	run.finished_ms = finished;
	CONF_OK(c, store_log_run(c->s, &run, &c->err));
	conf_runs rs = {0};
	conf_list(c, "last", 0, -1, 0, &rs);
	int64_t id = 0;
	for (int i = 0; i < rs.n; i++)
		if (rs.rows[i].job_id == job_id && rs.rows[i].fire_at == fire_at &&
		    rs.rows[i].attempt == attempt)
			id = rs.rows[i].id;
	conf_runs_clear(&rs);
	assert_true(id > 0);
	return id;
}

static void conf_test_jobs_last_run(void **state)
{
	conf_ctx *c = *state;
	conf_last l = {.ids = {70, 71, 72, 73}};
	/* 70: a failed fire, then a fire whose second attempt succeeded */
	conf_log(c, 70, 1000, 1, DBCRON_RUN_FAILED, 1010);
	conf_log(c, 70, 2000, 1, DBCRON_RUN_FAILED, 2010);
	int64_t want70 = conf_log(c, 70, 2000, 2, DBCRON_RUN_SUCCEEDED, 2500);
	/* 71: a success, then a fire claimed ahead of its instant */
	int64_t want71 = conf_log(c, 71, 1000, 1, DBCRON_RUN_SUCCEEDED, 1010);
	conf_log(c, 71, 3000, 1, DBCRON_RUN_SCHEDULED, 3000);
	/* 72: none; 73: an older job's row of another id must not count */
	conf_log(c, 99, 9000, 1, DBCRON_RUN_SUCCEEDED, 9010);
	uint64_t before = c->s->stmt_count;
	CONF_OK(c, store_jobs_last_run(c->s, l.ids, 4, conf_last_one, &l, &c->err));
	uint64_t used = c->s->stmt_count - before;
	print_message("last runs of 4 jobs: %llu statements\n", (unsigned long long)used);
	assert_int_equal(used, 1); /* one statement for the page, whatever its size */
	assert_int_equal(l.calls, 2);
	assert_int_equal(l.run_id[0], want70);
	assert_int_equal(l.state[0], DBCRON_RUN_SUCCEEDED);
	assert_int_equal(l.finished[0], 2500);
	assert_int_equal(l.run_id[1], want71);
	assert_int_equal(l.state[1], DBCRON_RUN_SUCCEEDED);
	assert_int_equal(l.finished[1], 1010);
	assert_int_equal(l.run_id[2], 0);
	assert_int_equal(l.run_id[3], 0);
	/* an empty page asks nothing */
	before = c->s->stmt_count;
	CONF_OK(c, store_jobs_last_run(c->s, l.ids, 0, conf_last_one, &l, &c->err));
	assert_int_equal(c->s->stmt_count, before);
}

/* ---- lease locks ---- */

/*
 * Seed 002's lease lock.  Nothing here rests on timing: every check that a
 * lock is held runs against a lease of a minute, so a slow machine cannot
 * let it lapse in between, and every expiry is made by renewing to a 1 ms
 * ttl and waiting far longer.
 */
static void conf_test_locks(void **state)
{
	conf_ctx *c = *state;
	int64_t f1, f2, f3, until, until2;
	store_lock_row holder;
	int64_t now = conf_now(c);

	CONF_OK(c, store_lock_acquire(c->s, "job", "o1", 60000, &f1, &until, &holder, &c->err));
	assert_true(until >= now + 60000);
	assert_int_equal(store_lock_acquire(c->s, "job", "o2", 60000, &f2, &until2, &holder,
					 &c->err),
			 DBCRON_ELOCKED);
	assert_string_equal(holder.owner, "o1");
	assert_int_equal(holder.fence, f1);
	assert_non_null(strstr(c->err.msg, "o1"));
	store_lock_row_clear(&holder);

	/* A renew extends the lease from the database's now by its own ttl. */
	int64_t t0 = conf_now(c);
	CONF_OK(c, store_lock_renew(c->s, "job", "o1", f1, 120000, &until2, &c->err));
	assert_true(until2 >= t0 + 120000);
	assert_int_equal(store_lock_renew(c->s, "job", "o2", f1, 300, &until2, &c->err),
			 DBCRON_EFENCED);
	assert_int_equal(store_lock_release(c->s, "job", "o2", f1, &c->err), DBCRON_EFENCED);
	assert_int_equal(store_lock_renew(c->s, "job", "o1", f1 + 1, 300, &until2, &c->err),
			 DBCRON_EFENCED);
	assert_int_equal(store_lock_release(c->s, "job", "o1", f1 + 1, &c->err), DBCRON_EFENCED);

	/* o1 freezes past its lease: o2 takes over with a bigger fence. */
	CONF_OK(c, store_lock_renew(c->s, "job", "o1", f1, 1, &until2, &c->err));
	conf_sleep_ms(50);
	CONF_OK(c, store_lock_acquire(c->s, "job", "o2", 60000, &f2, &until2, &holder, &c->err));
	assert_int_equal(f2, f1 + 1);
	/* o1's late renew and release do not touch o2's lease. */
	assert_int_equal(store_lock_renew(c->s, "job", "o1", f1, 300, &until, &c->err),
			 DBCRON_EFENCED);
	assert_int_equal(store_lock_release(c->s, "job", "o1", f1, &c->err), DBCRON_EFENCED);
	assert_int_equal(store_lock_acquire(c->s, "job", "o3", 300, &f3, &until, &holder,
					 &c->err),
			 DBCRON_ELOCKED);
	assert_string_equal(holder.owner, "o2");
	store_lock_row_clear(&holder);

	/* Release frees the lock and keeps the row, so the fence grows.  (The
	 * acquire comes a few milliseconds later: whether a release frees the
	 * lock within its own millisecond of the database clock is not
	 * something a test can tell without landing there by luck.) */
	CONF_OK(c, store_lock_release(c->s, "job", "o2", f2, &c->err));
	conf_sleep_ms(5);
	CONF_OK(c, store_lock_acquire(c->s, "job", "o3", 60000, &f3, &until, &holder, &c->err));
	assert_int_equal(f3, f2 + 1);

	/* One owner name, two holders in turn (the node's maintenance lock is
	 * held under the node id, `dbcron lock --owner` under a fixed name):
	 * only the fence tells the stale holder from the current one, so an
	 * older fence can neither release nor renew the newer lease. */
	int64_t g1, g2;
	CONF_OK(c, store_lock_acquire(c->s, "maint", "node-a", 60000, &g1, &until, &holder,
				      &c->err));
	CONF_OK(c, store_lock_renew(c->s, "maint", "node-a", g1, 1, &until, &c->err));
	conf_sleep_ms(50);
	CONF_OK(c, store_lock_acquire(c->s, "maint", "node-a", 60000, &g2, &until, &holder,
				      &c->err));
	assert_int_equal(g2, g1 + 1);
	assert_int_equal(store_lock_release(c->s, "maint", "node-a", g1, &c->err),
			 DBCRON_EFENCED);
	assert_int_equal(store_lock_renew(c->s, "maint", "node-a", g1, 1, &until, &c->err),
			 DBCRON_EFENCED);
	assert_int_equal(store_lock_acquire(c->s, "maint", "node-b", 60000, &f3, &until, &holder,
					 &c->err),
			 DBCRON_ELOCKED);
	assert_string_equal(holder.owner, "node-a");
	assert_int_equal(holder.fence, g2);
	store_lock_row_clear(&holder);
	CONF_OK(c, store_lock_release(c->s, "maint", "node-a", g2, &c->err));

	assert_int_equal(store_lock_acquire(c->s, "", "o3", 300, &f1, &until, &holder, &c->err),
			 DBCRON_EINVAL);
	assert_int_equal(store_lock_acquire(c->s, "x", "o3", 0, &f1, &until, &holder, &c->err),
			 DBCRON_EINVAL);
}

/* ---- the outbox (issue 26) ---- */

typedef struct conf_events {
	int n;
	store_event e[8]; /* id, run_id, kind, state, attempts; target and
			   * claim_token copied (conf_events_clear) */
} conf_events;

static int conf_event_cb(void *ctx, const store_event *ev)
{
	conf_events *es = ctx;
	if (es->n < 8) {
		store_event *e = &es->e[es->n++];
		*e = *ev;
		e->job_name = e->last_error = e->node = NULL;
		e->target = dbcron__strdup(ev->target);
		e->claim_token = ev->claim_token ? dbcron__strdup(ev->claim_token) : NULL;
	}
	return 0;
}

static void conf_events_clear(conf_events *es)
{
	for (int i = 0; i < es->n; i++) {
		dbcron__free(es->e[i].target);
		dbcron__free(es->e[i].claim_token);
	}
	es->n = 0;
}

/*
 * An outcome that lands writes one event per target in its transaction; a
 * retry-bound failure, a fenced or a repeated outcome writes none.  Events
 * go to one live node at a time: those of a node whose lease ran out go
 * to the next claimer, and the late node's end of delivery is fenced.
 */
static void conf_test_events(void **state)
{
	conf_ctx *c = *state;
	int64_t now = conf_now(c);
	conf_put(c, 2, "ev", now - 100);
	store_node_info na, nd;
	conf_node(&na, "A", "inc-a", 60000);
	conf_node(&nd, "D", "inc-d", 1); /* its lease ends at once */
	CONF_OK(c, store_node_register(c->s, &na, &c->err));
	CONF_OK(c, store_node_register(c->s, &nd, &c->err));
	conf_planner p = {.stop = -1, .step = 60000};
	store_claim_result r;
	CONF_OK(c, conf_claim(c, c->s, "A", "ta", 10, &p, &r));
	assert_int_equal(r.nruns, 2);

	store_update u[3];
	u[0] = conf_update(&r.runs[0], DBCRON_RUN_FAILED);
	u[0].retry_due_at = now + 60000; /* not final: the node names no kind */
	u[1] = conf_update(&r.runs[1], DBCRON_RUN_FAILED);
	u[1].react_kind = MODEL_REACT_FAILURE;
	u[1].react_targets = "job:x\nhttp://h/1";
	CONF_OK(c, store_apply(c->s, "A", u, 2, &c->err));
	assert_true(u[1].applied);
	/* the flush written again (a reply lost): a dialect may report the
	 * same outcome as applied again (MariaDB reads the rows back by
	 * state); UNIQUE(run_id, kind, target) still makes no second event */
	u[2] = u[1];
	CONF_OK(c, store_apply(c->s, "A", &u[2], 1, &c->err));
	conf_events es = {0};
	CONF_OK(c, store_events_list(c->s, NULL, 0, 100, conf_event_cb, &es, &c->err));
	assert_int_equal(es.n, 2);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(es.e[i].run_id, r.runs[1].run.id);
		assert_int_equal(es.e[i].kind, MODEL_REACT_FAILURE);
		assert_int_equal(es.e[i].state, MODEL_EVENT_PENDING);
		assert_int_equal(es.e[i].attempts, 0);
	}
	conf_events_clear(&es);

	/* D claims both, then its lease is over: A takes them over */
	conf_sleep_ms(20);
	conf_events ed = {0};
	CONF_OK(c, store_events_claim(c->s, "D", "ed", 10, conf_event_cb, &ed, &c->err));
	assert_int_equal(ed.n, 2);
	CONF_OK(c, store_events_claim(c->s, "A", "ea", 10, conf_event_cb, &es, &c->err));
	assert_int_equal(es.n, 2);
	assert_int_equal(es.e[0].attempts, 2);
	assert_string_equal(es.e[0].claim_token, "ea");
	bool applied = true;
	CONF_OK(c, store_event_finish(c->s, &ed.e[0], "D", MODEL_EVENT_DELIVERED, -1, NULL,
				      &applied, &c->err));
	assert_false(applied);
	/* A holds them under a live lease: nobody else gets them */
	conf_events eb = {0};
	CONF_OK(c, store_events_claim(c->s, "B", "eb", 10, conf_event_cb, &eb, &c->err));
	assert_int_equal(eb.n, 0);
	CONF_OK(c, store_event_finish(c->s, &es.e[0], "A", MODEL_EVENT_DELIVERED, -1, NULL,
				      &applied, &c->err));
	assert_true(applied);
	CONF_OK(c, store_event_finish(c->s, &es.e[1], "A", MODEL_EVENT_PENDING, now + 600000,
				      "HTTP 503", &applied, &c->err));
	assert_true(applied);
	/* a retry waits for its time; a delivered event is never claimed */
	CONF_OK(c, store_events_claim(c->s, "B", "eb2", 10, conf_event_cb, &eb, &c->err));
	assert_int_equal(eb.n, 0);
	conf_events_clear(&es);
	CONF_OK(c, store_events_list(c->s, NULL, MODEL_EVENT_DELIVERED, 100, conf_event_cb, &es,
				     &c->err));
	assert_int_equal(es.n, 1);
	conf_events_clear(&es);
	conf_events_clear(&ed);
	store_claim_result_clear(&r);
}

/*
 * Ends of deliveries in one transaction (store_events_finish, what a
 * node's db thread writes): each fenced on its own claim, a retry due the
 * database's now + retry_in_ms, a hand-back (PENDING, no delay) due at
 * once for any node, all or none; a claim's events read back by token.
 */
static void conf_test_events_batch(void **state)
{
	conf_ctx *c = *state;
	int64_t now = conf_now(c);
	conf_put(c, 2, "eb", now - 100);
	store_node_info na, nb;
	conf_node(&na, "A", "inc-a", 60000);
	conf_node(&nb, "B", "inc-b", 60000);
	CONF_OK(c, store_node_register(c->s, &na, &c->err));
	CONF_OK(c, store_node_register(c->s, &nb, &c->err));
	conf_planner p = {.stop = -1, .step = 60000};
	store_claim_result r;
	CONF_OK(c, conf_claim(c, c->s, "A", "ta", 10, &p, &r));
	assert_int_equal(r.nruns, 2);
	store_update u[2];
	for (int i = 0; i < 2; i++) {
		u[i] = conf_update(&r.runs[i], DBCRON_RUN_FAILED);
		u[i].react_kind = MODEL_REACT_FAILURE;
		u[i].react_targets = "http://h/1";
	}
	CONF_OK(c, store_apply(c->s, "A", u, 2, &c->err));
	conf_events ea = {0}, eb = {0};
	CONF_OK(c, store_events_claim(c->s, "A", "tok-a", 10, conf_event_cb, &ea, &c->err));
	assert_int_equal(ea.n, 2);

	/* a bad end in the lot: nothing of the lot is written */
	store_event_end bad[2] = {
		{.ev = &ea.e[0], .state = MODEL_EVENT_DELIVERED, .next_at = -1},
		{.ev = &ea.e[1], .state = 9, .next_at = -1},
	};
	assert_int_equal(store_events_finish(c->s, "A", bad, 2, &c->err), DBCRON_EINVAL);
	assert_false(bad[0].applied);
	CONF_OK(c, store_events_claimed(c->s, "tok-a", conf_event_cb, &eb, &c->err));
	assert_int_equal(eb.n, 2); /* both still delivering under A's claim */
	conf_events_clear(&eb);

	/* a retry and an end under someone else's claim, in one lot */
	store_event ghost = ea.e[1];
	ghost.claim_token = "not-ours";
	store_event_end ends[2] = {
		{.ev = &ea.e[0], .state = MODEL_EVENT_PENDING, .next_at = -1,
		 .retry_in_ms = 600000, .error = "HTTP 503"},
		{.ev = &ghost, .state = MODEL_EVENT_DELIVERED, .next_at = -1},
	};
	CONF_OK(c, store_events_finish(c->s, "A", ends, 2, &c->err));
	assert_true(ends[0].applied);
	assert_false(ends[1].applied);
	CONF_OK(c, store_events_list(c->s, NULL, MODEL_EVENT_PENDING, 100, conf_event_cb, &eb,
				     &c->err));
	assert_int_equal(eb.n, 1);
	assert_int_equal(eb.e[0].id, ea.e[0].id);
	assert_true(eb.e[0].next_at >= now + 600000 - 5000);
	conf_events_clear(&eb);
	/* the retry waits; the other is still A's */
	CONF_OK(c, store_events_claim(c->s, "B", "tok-b", 10, conf_event_cb, &eb, &c->err));
	assert_int_equal(eb.n, 0);
	CONF_OK(c, store_events_claimed(c->s, "tok-a", conf_event_cb, &eb, &c->err));
	assert_int_equal(eb.n, 1);
	assert_int_equal(eb.e[0].id, ea.e[1].id);
	conf_events_clear(&eb);

	/* handed back (A stops): B takes it at once */
	store_event_end back = {.ev = &ea.e[1], .state = MODEL_EVENT_PENDING, .next_at = -1};
	CONF_OK(c, store_events_finish(c->s, "A", &back, 1, &c->err));
	assert_true(back.applied);
	CONF_OK(c, store_events_claim(c->s, "B", "tok-b2", 10, conf_event_cb, &eb, &c->err));
	assert_int_equal(eb.n, 1);
	assert_int_equal(eb.e[0].id, ea.e[1].id);
	assert_int_equal(eb.e[0].attempts, 2);
	conf_events_clear(&eb);
	conf_events_clear(&ea);
	store_claim_result_clear(&r);
}

/* The events of job name (at most 8) into es, each checked of kind. */
static int conf_events_of(conf_ctx *c, const char *name, int kind, conf_events *es)
{
	CONF_OK(c, store_events_list(c->s, name, 0, 100, conf_event_cb, es, &c->err));
	for (int i = 0; i < es->n; i++)
		assert_int_equal(es->e[i].kind, kind);
	return es->n;
}

/*
 * A claim that ends fires or runs MISFIRED (the misfire policy's late
 * fire, routing's stranded run) writes their misfire events in its own
 * transaction: one per target, once, however many claims follow; a job
 * without --on-misfire gets none.
 */
static void conf_test_events_misfire(void **state)
{
	conf_ctx *c = *state;
	int64_t now = conf_now(c), id, fire_at;
	dbcron_job j[3];
	conf_job(&j[0], "mf", now - 100);
	j[0].on_misfire = dbcron__strdup("http://h/m\njob:x");
	conf_job(&j[1], "mf-quiet", now - 100);
	/* a handler no node has, past its threshold once triggered */
	conf_job(&j[2], "mf-lost", now + 3600000);
	dbcron__free(j[2].handler);
	j[2].handler = dbcron__strdup("x-none");
	j[2].misfire_threshold_ms = 1;
	j[2].on_misfire = dbcron__strdup("http://h/l");
	CONF_OK(c, conf_upsert(c, j, 3));
	for (int i = 0; i < 3; i++)
		dbcron_job_clear(&j[i]);

	conf_planner p = {.stop = -1, .step = 60000, .misfire = true};
	store_claim_result r;
	CONF_OK(c, conf_claim(c, c->s, "A", "ta", 10, &p, &r));
	assert_int_equal(r.nruns, 0);
	assert_int_equal(r.nterminal, 2);
	store_claim_result_clear(&r);
	conf_runs rs = {0};
	conf_list(c, "mf", 0, -1, 0, &rs);
	assert_int_equal(rs.n, 1);
	assert_int_equal(rs.rows[0].state, DBCRON_RUN_MISFIRED);
	int64_t mf_run = rs.rows[0].id;
	conf_runs_clear(&rs);
	conf_events es = {0};
	assert_int_equal(conf_events_of(c, "mf", MODEL_REACT_MISFIRE, &es), 2);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(es.e[i].run_id, mf_run);
		assert_int_equal(es.e[i].state, MODEL_EVENT_PENDING);
	}
	conf_events_clear(&es);
	assert_int_equal(conf_events_of(c, "mf-quiet", MODEL_REACT_MISFIRE, &es), 0);

	/* routing's stranded run (close_stranded): its event once, the
	 * second node's claim finds nothing to end */
	CONF_OK(c, store_job_trigger(c->s, "mf-lost", &id, &fire_at, &c->err));
	conf_sleep_ms(5);
	static const char *const sleep_only[] = {"sleep"};
	conf_planner q = {.stop = -1, .step = 60000};
	CONF_OK(c, conf_claim_routed(c, "n-a", "tb", sleep_only, 1, &q, &r));
	assert_int_equal(r.nterminal, 1);
	store_claim_result_clear(&r);
	CONF_OK(c, conf_claim_routed(c, "n-b", "tc", sleep_only, 1, &q, &r));
	assert_int_equal(r.nterminal, 0);
	store_claim_result_clear(&r);
	assert_int_equal(conf_events_of(c, "mf-lost", MODEL_REACT_MISFIRE, &es), 1);
	assert_int_equal(es.e[0].run_id, id);
	conf_events_clear(&es);
	assert_int_equal(conf_events_of(c, "mf", MODEL_REACT_MISFIRE, &es), 2);
	conf_events_clear(&es);
}

/*
 * A reap that abandons a lost node's run for good (no retry left) writes
 * its failure event in the reap's transaction, once; a run abandoned with
 * a retry following, or of a job without --on-failure, gets none.
 */
static void conf_test_events_reap(void **state)
{
	conf_ctx *c = *state;
	int64_t now = conf_now(c), dbnow;
	dbcron_job j[3];
	const char *names[] = {"ra-final", "ra-retry", "ra-quiet"};
	for (int i = 0; i < 3; i++) {
		conf_job(&j[i], names[i], now - 100);
		j[i].max_retries = i == 1 ? 3 : 0;
		j[i].on_failure = i == 2 ? NULL : dbcron__strdup("http://h/f");
	}
	CONF_OK(c, conf_upsert(c, j, 3));
	for (int i = 0; i < 3; i++)
		dbcron_job_clear(&j[i]);
	store *sb;
	assert_int_equal(conf_open(c, &sb), 0);
	store_node_info na, nb;
	conf_node(&na, "A", "inc-a", 60000);
	conf_node(&nb, "B", "inc-b", 60000);
	CONF_OK(c, store_node_register(c->s, &na, &c->err));
	CONF_OK(c, store_node_register(sb, &nb, &c->err));
	conf_planner p = {.stop = -1, .step = 60000};
	store_claim_result r;
	CONF_OK(c, conf_claim(c, c->s, "A", "ta", 10, &p, &r));
	assert_int_equal(r.nruns, 3);
	store_update u[3];
	for (int i = 0; i < 3; i++) {
		u[i] = conf_update(&r.runs[i], DBCRON_RUN_RUNNING);
		u[i].started_ms = now;
	}
	CONF_OK(c, store_apply(c->s, "A", u, 3, &c->err));
	CONF_OK(c, store_node_heartbeat(c->s, "A", "inc-a", 1, &dbnow, &c->err));
	conf_sleep_ms(20);
	size_t reaped = 0;
	CONF_OK(c, store_reap(sb, &reaped, &c->err));
	assert_int_equal(reaped, 3);
	assert_true(store_events_written_take(sb));
	CONF_OK(c, store_reap(sb, &reaped, &c->err));
	assert_int_equal(reaped, 0);

	conf_runs rs = {0};
	conf_list(c, "ra-final", 0, -1, 0, &rs);
	assert_int_equal(rs.n, 1);
	assert_int_equal(rs.rows[0].state, DBCRON_RUN_ABANDONED);
	conf_events es = {0};
	assert_int_equal(conf_events_of(c, "ra-final", MODEL_REACT_FAILURE, &es), 1);
	assert_int_equal(es.e[0].run_id, rs.rows[0].id);
	assert_string_equal(es.e[0].target, "http://h/f");
	conf_runs_clear(&rs);
	conf_events_clear(&es);
	assert_int_equal(conf_events_of(c, "ra-retry", MODEL_REACT_FAILURE, &es), 0);
	assert_int_equal(conf_events_of(c, "ra-quiet", MODEL_REACT_FAILURE, &es), 0);
	store_claim_result_clear(&r);
	store_close(sb);
}

/* ---- overdue (issue 26 item 1) ---- */

/* A child raising overdue events on its own connection; the count it
 * raised written to fd.  A busy database (SQLite's lock, a deadlock) is
 * tried again. */
static int conf_overdue_child(const char *url, int fd)
{
	store *s = NULL;
	dbcron_err err = {0};
	size_t raised = 0;
	int rc;
	if (store_open(url, &s, &err))
		return 2;
	for (int i = 0; i < 50; i++) {
		if (!(rc = store_overdue_raise(s, &raised, &err)) || err.code != DBCRON_EBUSY)
			break;
		conf_sleep_ms(10);
	}
	store_close(s);
	return !rc && write(fd, &raised, sizeof(raised)) == (ssize_t)sizeof(raised) ? 0 : 3;
}

static int64_t conf_overdue_count(conf_ctx *c, int64_t *run_id)
{
	conf_events es = {0};
	int64_t n = 0;
	CONF_OK(c, store_events_list(c->s, "od", 0, 100, conf_event_cb, &es, &c->err));
	for (int i = 0; i < es.n; i++) {
		assert_int_equal(es.e[i].kind, MODEL_REACT_OVERDUE);
		if (i == 0 && run_id)
			*run_id = es.e[i].run_id;
		n++;
	}
	conf_events_clear(&es);
	return n;
}

/*
 * A job with no success for max_silence_ms gets one overdue event per
 * target per silent period, however many connections raise at once; none
 * again for the same period; a success starts a new period (its run id),
 * which raises again once it too is silent.  A job without on_overdue, or
 * still within its silence, raises nothing.
 */
static void conf_test_overdue(void **state)
{
	conf_ctx *c = *state;
	enum { NKIDS = 4 };
	int64_t now = conf_now(c), period = 0, tid = 0;
	dbcron_job j[3];
	const char *names[] = {"od", "od-quiet", "od-none"};
	for (int i = 0; i < 3; i++) {
		conf_job(&j[i], names[i], now + 3600000);
		j[i].max_silence_ms = i == 1 ? 3600000 : 50;
		j[i].on_overdue = i == 2 ? NULL : dbcron__strdup("http://h/o\nexec:/bin/true");
	}
	CONF_OK(c, conf_upsert(c, j, 3));
	for (int i = 0; i < 3; i++)
		dbcron_job_clear(&j[i]);
	conf_sleep_ms(120);

	FILE *out = tmpfile();
	assert_non_null(out);
	pid_t kids[NKIDS];
	fflush(NULL);
	for (int i = 0; i < NKIDS; i++) {
		kids[i] = fork();
		assert_true(kids[i] >= 0);
		if (kids[i] == 0)
			_exit(conf_overdue_child(c->url, fileno(out)));
	}
	for (int i = 0; i < NKIDS; i++) {
		int st = 0;
		assert_int_equal(waitpid(kids[i], &st, 0), kids[i]);
		assert_true(WIFEXITED(st));
		assert_int_equal(WEXITSTATUS(st), 0);
	}
	rewind(out);
	size_t got[NKIDS] = {0}, sum = 0;
	assert_int_equal(fread(got, sizeof(got[0]), NKIDS, out), NKIDS);
	fclose(out);
	for (int i = 0; i < NKIDS; i++)
		sum += got[i];
	assert_int_equal(sum, 2); /* the two targets of od, once */
	assert_int_equal(conf_overdue_count(c, &period), 2);
	assert_true(period < 0); /* no success yet: the period is the job's */
	size_t raised = 9;
	CONF_OK(c, store_overdue_raise(c->s, &raised, &c->err));
	assert_int_equal(raised, 0);

	/* a success ends the period; the next silence raises once more */
	store_node_info na;
	conf_node(&na, "A", "inc-a", 60000);
	CONF_OK(c, store_node_register(c->s, &na, &c->err));
	CONF_OK(c, store_job_trigger(c->s, "od", &tid, NULL, &c->err));
	conf_planner p = {.stop = -1, .step = 60000};
	store_claim_result r;
	CONF_OK(c, conf_claim(c, c->s, "A", "to", 10, &p, &r));
	assert_int_equal(r.nruns, 1);
	store_update u = conf_update(&r.runs[0], DBCRON_RUN_SUCCEEDED);
	u.started_ms = u.finished_ms = conf_now(c); /* as a node writes it */
	CONF_OK(c, store_apply(c->s, "A", &u, 1, &c->err));
	assert_true(u.applied);
	CONF_OK(c, store_overdue_raise(c->s, &raised, &c->err));
	assert_int_equal(raised, 0);
	conf_sleep_ms(120);
	CONF_OK(c, store_overdue_raise(c->s, &raised, &c->err));
	assert_int_equal(raised, 2);
	CONF_OK(c, store_overdue_raise(c->s, &raised, &c->err));
	assert_int_equal(raised, 0);
	assert_int_equal(conf_overdue_count(c, &period), 4);
	assert_int_equal(period, r.runs[0].run.id); /* newest first */
	store_claim_result_clear(&r);
}

#define CONF_T(fn) cmocka_unit_test_setup_teardown(fn, conf_setup, conf_teardown)

#define STORE_CONFORMANCE_TESTS                                                 \
	cmocka_unit_test_setup_teardown(conf_test_check_schema_empty,           \
					conf_setup_empty, conf_teardown),       \
	cmocka_unit_test_setup_teardown(conf_test_migrate, conf_setup_empty,    \
					conf_teardown),                         \
	cmocka_unit_test(conf_test_open_bad_url), CONF_T(conf_test_job_put),   \
	CONF_T(conf_test_job_runas), CONF_T(conf_test_job_fields),              \
	CONF_T(conf_test_job_spread_seed),              \
	CONF_T(conf_test_job_ops), CONF_T(conf_test_claim),                     \
	CONF_T(conf_test_claim_terminal_fires),                                 \
	CONF_T(conf_test_claim_two_claimers), CONF_T(conf_test_every_node),     \
	CONF_T(conf_test_claim_overlap), CONF_T(conf_test_claim_caps),          \
	CONF_T(conf_test_claim_busy_column),                                    \
	CONF_T(conf_test_concurrent_claimers),                                  \
	CONF_T(conf_test_claim_statements), CONF_T(conf_test_claim_routing),    \
	CONF_T(conf_test_claim_stranded), CONF_T(conf_test_claim_stranded_after), \
	CONF_T(conf_test_claim_stranded_runs),                                  \
	CONF_T(conf_test_claim_stranded_race), CONF_T(conf_test_claim_runs_paused), \
	CONF_T(conf_test_claim_pools),                                          \
	CONF_T(conf_test_claim_pools_joint),                                    \
	CONF_T(conf_test_node_handlers_add),                                    \
	CONF_T(conf_test_apply), CONF_T(conf_test_apply_state_machine),         \
	CONF_T(conf_test_events), CONF_T(conf_test_events_batch),               \
	CONF_T(conf_test_events_misfire), CONF_T(conf_test_events_reap),        \
	CONF_T(conf_test_overdue),                                              \
	CONF_T(conf_test_reap), CONF_T(conf_test_node_register_resolves),       \
	CONF_T(conf_test_run_cancel), CONF_T(conf_test_reap_cancelled),        \
	CONF_T(conf_test_trigger_params),                                       \
	CONF_T(conf_test_reap_unwritten_starts), CONF_T(conf_test_reap_retry_budget),         \
	CONF_T(conf_test_reap_racing_start), CONF_T(conf_test_claim_lock_row),                 \
	CONF_T(conf_test_node_stop_release), CONF_T(conf_test_deleted_job_preclaimed),          \
	CONF_T(conf_test_runs_list),                                                           \
	CONF_T(conf_test_jobs_last_run), CONF_T(conf_test_locks)

#endif
