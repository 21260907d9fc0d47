/* The in-flight table: the phase checker (every edge of the diagram and
 * nothing else), the lists, and job snapshots shared by the fires of a job
 * version and freed with the last of them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "core/alloc.h"
#include "sched/inflight.h"

/* The diagram in inflight.h, restated here on purpose. */
static const fire_phase diagram[][2] = {
	{FIRE_NEW, FIRE_CLAIMED},
	{FIRE_CLAIMED, FIRE_HELD},       {FIRE_CLAIMED, FIRE_STARTING},
	{FIRE_CLAIMED, FIRE_STARTED},    {FIRE_CLAIMED, FIRE_FINISHED},
	{FIRE_CLAIMED, FIRE_RELEASED},
	{FIRE_HELD, FIRE_HELD},          {FIRE_HELD, FIRE_STARTING},
	{FIRE_HELD, FIRE_STARTED},       {FIRE_HELD, FIRE_FINISHED},
	{FIRE_HELD, FIRE_RELEASED},      {FIRE_HELD, FIRE_CLAIMED},
	{FIRE_STARTING, FIRE_RUNNING},   {FIRE_STARTING, FIRE_RELEASED},
	{FIRE_STARTING, FIRE_FINISHED},
	{FIRE_STARTED, FIRE_RUNNING},    {FIRE_STARTED, FIRE_FINISHED},
	{FIRE_STARTED, FIRE_CLAIMED},
	{FIRE_RUNNING, FIRE_STARTED},    {FIRE_RUNNING, FIRE_FINISHED},
	{FIRE_RUNNING, FIRE_CLAIMED},
	{FIRE_FINISHED, FIRE_WRITING},
	{FIRE_WRITING, FIRE_FINISHED},   {FIRE_WRITING, FIRE_WRITTEN},
};

static bool in_diagram(fire_phase a, fire_phase b)
{
	for (size_t i = 0; i < sizeof(diagram) / sizeof(diagram[0]); i++)
		if (diagram[i][0] == a && diagram[i][1] == b)
			return true;
	return false;
}

static void test_edges_exactly(void **state)
{
	(void)state;
	size_t ok = 0;
	for (int a = 0; a < FIRE_NPHASES; a++)
		for (int b = 0; b < FIRE_NPHASES; b++) {
			bool want = in_diagram((fire_phase)a, (fire_phase)b);
			if (fire_phase_ok((fire_phase)a, (fire_phase)b) != want)
				fail_msg("%s -> %s: checker says %d", fire_phase_name((fire_phase)a),
					 fire_phase_name((fire_phase)b), !want);
			ok += want;
		}
	assert_int_equal(ok, sizeof(diagram) / sizeof(diagram[0]));
	/* out of range is never an edge */
	assert_false(fire_phase_ok(FIRE_NPHASES, FIRE_CLAIMED));
	assert_false(fire_phase_ok(FIRE_NEW, FIRE_NPHASES));
	assert_false(fire_phase_ok((fire_phase)-1, FIRE_CLAIMED));
	/* nothing leaves the freed phases */
	for (int b = 0; b < FIRE_NPHASES; b++) {
		assert_false(fire_phase_ok(FIRE_WRITTEN, (fire_phase)b));
		assert_false(fire_phase_ok(FIRE_RELEASED, (fire_phase)b));
	}
	assert_string_equal(fire_phase_name(FIRE_WRITING), "writing");
	assert_string_equal(fire_phase_name(FIRE_NPHASES), "invalid");
}

static int bad_calls;
static fire_phase bad_to;

static void count_bad(const fire *f, fire_phase to)
{
	(void)f;
	bad_calls++;
	bad_to = to;
}

static void test_set_phase_checks(void **state)
{
	(void)state;
	fire f;
	memset(&f, 0, sizeof(f));
	fire_set_bad_phase_hook(count_bad);
	bad_calls = 0;

	/* the common life, then a start written twice after a failed batch */
	static const fire_phase life[] = {
		FIRE_CLAIMED, FIRE_STARTED, FIRE_RUNNING, FIRE_STARTED,
		FIRE_RUNNING, FIRE_FINISHED, FIRE_WRITING, FIRE_FINISHED,
		FIRE_WRITING, FIRE_WRITTEN,
	};
	for (size_t i = 0; i < sizeof(life) / sizeof(life[0]); i++) {
		fire_set_phase(&f, life[i]);
		assert_int_equal(f.phase, life[i]);
	}
	assert_int_equal(bad_calls, 0);

	/* invalid edges call the hook and leave the phase alone */
	static const fire_phase bad[][2] = {
		{FIRE_NEW, FIRE_STARTED},      /* never started unclaimed */
		{FIRE_CLAIMED, FIRE_RUNNING},  /* RUNNING only once written */
		{FIRE_CLAIMED, FIRE_WRITTEN},
		{FIRE_STARTING, FIRE_STARTED}, /* at-most-once skips the batch */
		{FIRE_STARTED, FIRE_RELEASED}, /* a started fire is never handed back */
		{FIRE_RUNNING, FIRE_RELEASED},
		{FIRE_FINISHED, FIRE_WRITTEN}, /* only through a batch */
		{FIRE_FINISHED, FIRE_RELEASED},
		{FIRE_WRITTEN, FIRE_CLAIMED},
		{FIRE_RELEASED, FIRE_CLAIMED},
		{FIRE_CLAIMED, FIRE_CLAIMED},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		f.phase = bad[i][0];
		int before = bad_calls;
		fire_set_phase(&f, bad[i][1]);
		assert_int_equal(bad_calls, before + 1);
		assert_int_equal(bad_to, bad[i][1]);
		assert_int_equal(f.phase, bad[i][0]);
	}
	fire_set_bad_phase_hook(NULL);
}

static void test_lists(void **state)
{
	(void)state;
	fire a, b, c;
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	memset(&c, 0, sizeof(c));
	fire_list l = {0};
	assert_true(fire_list_empty(&l));
	fire_list_push(&l, &a);
	fire_list_push(&l, &b);
	fire_list_push(&l, &c);
	fire_list_unlink(&l, &b); /* middle */
	assert_ptr_equal(l.head, &a);
	assert_ptr_equal(a.next, &c);
	assert_ptr_equal(c.prev, &a);
	fire_list_unlink(&l, &c); /* tail */
	assert_ptr_equal(l.tail, &a);
	fire_list_push(&l, &b);
	assert_ptr_equal(fire_list_pop(&l), &a);
	assert_ptr_equal(fire_list_pop(&l), &b);
	assert_null(fire_list_pop(&l));
	assert_true(fire_list_empty(&l));
	fire_list_push(&l, &a);
	fire_list_push(&l, &c);
	assert_ptr_equal(fire_list_take(&l), &a);
	assert_ptr_equal(a.next, &c);
	assert_true(fire_list_empty(&l));
}

/* A claimed run of job `job` as the store hands it over: its strings its
 * own, for the fire to take. */
static store_claimed claimed(dbcron_run *run, const dbcron_job *job, int64_t fire_at)
{
	memset(run, 0, sizeof(*run));
	run->id = fire_at;
	run->job_id = job->id;
	run->job_name = dbcron__strdup(job->name);
	run->fire_at = run->due_at = fire_at;
	run->attempt = 1;
	run->node = dbcron__strdup("n1");
	run->claim_token = dbcron__strdup("tok");
	return (store_claimed){.run = *run, .job = job};
}

/* A fire of c whose job (the test's own, with borrowed strings) is copied. */
static fire *fire_of(job_state *js, store_claimed *c)
{
	fire *f = fire_take(NULL, js, c, (dbcron_job *)c->job, false);
	dbcron_run_clear(&c->run); /* what the fire did not take */
	return f;
}

static dbcron_job shell_job(char **argv)
{
	dbcron_job j;
	dbcron_job_init(&j);
	j.id = 7;
	j.name = "j";
	j.kind = DBCRON_SCHED_EVERY;
	j.spec = "1s";
	j.interval_ms = 1000;
	j.executor = DBCRON_EXEC_SHELL;
	j.argv = argv;
	j.argc = 2;
	j.updated_ms = 100;
	return j;
}

static void done(fire *f)
{
	fire_set_phase(f, FIRE_CLAIMED);
	fire_set_phase(f, FIRE_RELEASED);
	fire_free(f);
}

static void test_snapshot_per_job(void **state)
{
	(void)state;
	inflight_jobs t = {0};
	job_state *js = inflight_job_get(&t, 7);
	assert_non_null(js);
	assert_ptr_equal(inflight_job_get(&t, 7), js);

	char *argv1[] = {"echo", "one", NULL};
	char *argv2[] = {"echo", "two", NULL};
	dbcron_job v1 = shell_job(argv1);
	dbcron_run r;
	store_claimed c = claimed(&r, &v1, 1000);
	fire *f1 = fire_of(js, &c);
	/* a later claim of the unchanged job (its next fire moved on) */
	dbcron_job v1b = v1;
	v1b.next_fire_at = 5000;
	c = claimed(&r, &v1b, 2000);
	fire *f2 = fire_of(js, &c);
	assert_non_null(f1);
	assert_non_null(f2);
	assert_ptr_equal(f1->snap, f2->snap); /* one copy for both fires */
	assert_int_equal(f1->snap->refs, 2);
	assert_int_equal(js->nsnaps, 1);
	assert_ptr_not_equal(f1->snap->job.argv, v1.argv); /* a deep copy */

	/* the job is edited: new fires get a new snapshot, old ones keep theirs */
	dbcron_job v2 = shell_job(argv2);
	v2.updated_ms = 200;
	c = claimed(&r, &v2, 3000);
	fire *f3 = fire_of(js, &c);
	assert_non_null(f3);
	assert_ptr_not_equal(f3->snap, f1->snap);
	assert_ptr_equal(js->snap, f3->snap);
	assert_int_equal(js->nsnaps, 2);
	assert_string_equal(f3->snap->job.argv[1], "two");

	/* an edit in the same millisecond is still seen */
	dbcron_job v3 = shell_job(argv1);
	v3.updated_ms = 200;
	v3.timeout_ms = 5000;
	c = claimed(&r, &v3, 4000);
	fire *f4 = fire_of(js, &c);
	assert_ptr_not_equal(f4->snap, f3->snap);
	assert_int_equal(js->nsnaps, 3);
	done(f4);
	assert_int_equal(js->nsnaps, 2);
	assert_ptr_equal(js->snap, NULL); /* the newest went with its fire */

	done(f1);
	assert_int_equal(js->nsnaps, 2); /* f2 still holds the first version */
	assert_int_equal(f2->snap->refs, 1);
	assert_string_equal(f2->snap->job.argv[1], "one");
	done(f2);
	assert_int_equal(js->nsnaps, 1);
	assert_string_equal(f3->snap->job.argv[1], "two");
	done(f3);
	assert_int_equal(js->nsnaps, 0);
	assert_null(js->snap);

	/* a fire whose snapshot cannot be made is not made (allocations: the
	 * run's three strings, the fire, its snapshot) */
	dbcron__alloc_fail_at(5);
	c = claimed(&r, &v1, 6000);
	fire *f5 = fire_of(js, &c);
	dbcron__alloc_fail_at(0);
	assert_null(f5);
	assert_int_equal(js->nsnaps, 0);
	inflight_jobs_free(&t);
}

/* The claim's hot path: fire_take moves the run's strings and, at the
 * job's last run in the claim with no snapshot standing for it, the job's
 * fields, instead of copying them; what it did not take stays with c. */
static void test_take_moves_rows(void **state)
{
	(void)state;
	inflight_jobs t = {0};
	job_state *js = inflight_job_get(&t, 7);
	char *argv[] = {"echo", "one", NULL};
	dbcron_job proto = shell_job(argv), jobs[2];
	dbcron_job_init(&jobs[0]);
	dbcron_job_init(&jobs[1]);
	assert_int_equal(dbcron_job_copy(&jobs[0], &proto), DBCRON_OK);
	assert_int_equal(dbcron_job_copy(&jobs[1], &proto), DBCRON_OK);
	dbcron_run r;
	store_claimed cs[3];
	for (int i = 0; i < 3; i++) {
		cs[i] = claimed(&r, &proto, 1000 + i);
		cs[i].job = &jobs[i < 2 ? 0 : 1];
	}
	/* a run that is not its job's last: the job is copied */
	char *argv_then = jobs[0].argv[1];
	fire *f1 = fire_take(NULL, js, &cs[0], &jobs[0], false);
	assert_non_null(f1);
	assert_null(cs[0].run.job_name); /* the run's strings went to the fire */
	assert_null(cs[0].run.claim_token);
	assert_string_equal(f1->run.claim_token, "tok");
	assert_ptr_equal(jobs[0].argv[1], argv_then); /* the job stayed */
	assert_ptr_not_equal(f1->snap->job.argv[1], argv_then);
	/* its last run: the snapshot stands for it, nothing to take */
	fire *f2 = fire_take(NULL, js, &cs[1], &jobs[0], true);
	assert_ptr_equal(f2->snap, f1->snap);
	assert_ptr_equal(jobs[0].argv[1], argv_then);
	/* an edited row with no snapshot of its own: its fields move */
	char *two = dbcron__strdup("two");
	dbcron__free(jobs[1].argv[1]);
	jobs[1].argv[1] = two;
	jobs[1].updated_ms = 300;
	fire *f3 = fire_take(NULL, js, &cs[2], &jobs[1], true);
	assert_non_null(f3);
	assert_ptr_not_equal(f3->snap, f1->snap);
	assert_ptr_equal(f3->snap->job.argv[1], two); /* taken, not copied */
	assert_null(jobs[1].argv);
	assert_null(jobs[1].name);
	assert_int_equal(js->nsnaps, 2);
	done(f1);
	done(f2);
	done(f3);
	assert_int_equal(js->nsnaps, 0);
	for (int i = 0; i < 3; i++)
		dbcron_run_clear(&cs[i].run); /* nothing left: frees nothing */
	dbcron_job_clear(&jobs[0]);
	dbcron_job_clear(&jobs[1]);
	inflight_jobs_free(&t);
}

static void test_free_checks_phase(void **state)
{
	(void)state;
	inflight_jobs t = {0};
	job_state *js = inflight_job_get(&t, 7);
	char *argv[] = {"true", "x", NULL};
	dbcron_job j = shell_job(argv);
	dbcron_run r;
	store_claimed c = claimed(&r, &j, 1000);
	fire *f = fire_of(js, &c);
	assert_non_null(f);
	fire_set_phase(f, FIRE_CLAIMED);
	fire_set_phase(f, FIRE_STARTED);
	fire_set_bad_phase_hook(count_bad);
	bad_calls = 0;
	fire_free(f); /* still in use: refused */
	assert_int_equal(bad_calls, 1);
	assert_int_equal(js->nsnaps, 1);
	fire_set_bad_phase_hook(NULL);
	fire_discard(f); /* teardown frees whatever phase */
	assert_int_equal(js->nsnaps, 0);
	inflight_jobs_free(&t);
}

/* A node keeps the states of jobs in flight, not of every job it ran: the
 * sweep frees idle states (no fire, no snapshot, no counting slow run) and
 * keeps the others where lookups find them. */
static void test_sweep_frees_idle_states(void **state)
{
	(void)state;
	inflight_jobs t = {0};
	enum { N = 5000 };
	for (int64_t id = 1; id <= N; id++)
		assert_non_null(inflight_job_get(&t, id));
	assert_int_equal(t.used, N);
	size_t big = t.nslots;

	char *argv[] = {"true", "x", NULL};
	dbcron_job j = shell_job(argv);
	dbcron_run r;
	store_claimed c = claimed(&r, &j, 1000);
	job_state *busy = inflight_job_get(&t, 7); /* a fire in flight */
	fire *f = fire_of(busy, &c);
	assert_non_null(f);
	job_state *slow = inflight_job_get(&t, 9); /* a slow run 30 s ago */
	slow->slow_at[0] = 100000 - 30000;
	job_state *old = inflight_job_get(&t, 11); /* one 90 s ago: no longer counts */
	old->slow_at[0] = 100000 - 90000;
	job_state *held = inflight_job_get(&t, 13); /* a held fire */
	c = claimed(&r, &j, 1000);
	fire *h = fire_of(held, &c);
	assert_non_null(h);
	fire_list_push(&held->held, h);

	assert_int_equal(inflight_jobs_sweep(&t, 100000, 60000), N - 3);
	assert_int_equal(t.used, 3);
	assert_true(t.nslots < big);
	assert_ptr_equal(inflight_job_get(&t, 7), busy);
	assert_ptr_equal(inflight_job_get(&t, 9), slow);
	assert_ptr_equal(inflight_job_get(&t, 13), held);
	/* the freed states come back empty when their job is claimed again */
	job_state *again = inflight_job_get(&t, 11);
	assert_ptr_not_equal(again, NULL);
	assert_int_equal(again->slow_at[0], 0);
	assert_int_equal(t.used, 4);

	fire_list_unlink(&held->held, h);
	done(h);
	done(f);
	assert_int_equal(inflight_jobs_sweep(&t, 100000, 60000), 3);
	assert_int_equal(t.used, 1); /* the slow one */
	/* nothing idle: nothing changes */
	assert_int_equal(inflight_jobs_sweep(&t, 100000, 60000), 0);
	assert_int_equal(inflight_jobs_sweep(&t, 200000, 60000), 1);
	assert_int_equal(t.used, 0);
	inflight_jobs_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_edges_exactly),
		cmocka_unit_test(test_set_phase_checks),
		cmocka_unit_test(test_lists),
		cmocka_unit_test(test_snapshot_per_job),
		cmocka_unit_test(test_take_moves_rows),
		cmocka_unit_test(test_free_checks_phase),
		cmocka_unit_test(test_sweep_frees_idle_states),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
