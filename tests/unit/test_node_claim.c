/*
 * A node holds the runs of a claim all or none (issue 23 item 18): with the
 * Nth allocation failing, for every N that lands inside the intake, either
 * every claimed run is on the node's timer heap or none is and the claim is
 * back in the pool; never a run SCHEDULED under the live node that the
 * node does not hold (it would wait there until the node restarts).
 * And the reap's bound: after a stall, and from the previous beat; and
 * when a pending write wakes the db thread.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/alloc.h"
#include "sched/dbloop_int.h"
#include "sched/node_int.h"

static char dir[] = "/tmp/dbcron-nclaim.XXXXXX";

/* One fire at next_fire_at, the next a second later. */
static int one_fire(void *ctx, const dbcron_job *job, int64_t now_ms, int64_t horizon_ms,
		    store_plan *out)
{
	store_fire *f = ctx;
	(void)now_ms;
	(void)horizon_ms;
	*f = (store_fire){.fire_at = job->next_fire_at, .due_at = job->next_fire_at,
			  .state = DBCRON_RUN_SCHEDULED};
	out->fires = f;
	out->nfires = 1;
	out->next_fire_at = job->next_fire_at + 1000;
	return DBCRON_OK;
}

struct count {
	const char *token;
	int claimed; /* SCHEDULED under n1 with the token */
};

static int count_run(void *ctx, const dbcron_run *r)
{
	struct count *c = ctx;
	if (r->state == DBCRON_RUN_SCHEDULED && r->claim_token && r->node &&
	    strcmp(r->claim_token, c->token) == 0 && strcmp(r->node, "n1") == 0)
		c->claimed++;
	return 0;
}

/* Drop what the node holds, as a hand-back would (no thread runs). */
static void drop_held(dbcron_node *n)
{
	timer_node *t;
	while ((t = timer_pop(&n->heap))) {
		fire *f = (fire *)t;
		fire_set_phase(f, FIRE_RELEASED);
		fire_free(f);
		n->inflight--;
	}
}

static void test_take_claim_oom(void **state)
{
	(void)state;
	char url[600];
	snprintf(url, sizeof(url), "sqlite:%s/t.db", dir);
	dbcron_err err = {0};
	store *s;
	assert_int_equal(store_open(url, &s, &err), DBCRON_OK);
	assert_int_equal(store_migrate(s, NULL, NULL, &err), DBCRON_OK);
	int64_t now;
	assert_int_equal(store_now_ms(s, &now, &err), DBCRON_OK);
	dbcron_job jobs[3];
	for (int i = 0; i < 3; i++) {
		char name[16];
		snprintf(name, sizeof(name), "j%d", i);
		dbcron_job_init(&jobs[i]);
		jobs[i].name = dbcron__strdup(name);
		jobs[i].kind = DBCRON_SCHED_EVERY;
		jobs[i].spec = dbcron__strdup("1s");
		jobs[i].interval_ms = 1000;
		jobs[i].executor = DBCRON_EXEC_HANDLER;
		jobs[i].handler = dbcron__strdup("noop");
		jobs[i].next_fire_at = now + 3600000;
	}
	size_t cr, up, del;
	assert_int_equal(store_job_put(s, jobs, 3, STORE_PUT_UPSERT, false, &cr, &up, &del, &err),
			 DBCRON_OK);
	for (int i = 0; i < 3; i++)
		dbcron_job_clear(&jobs[i]);

	dbcron_node_config cfg;
	dbcron_node_config_init(&cfg);
	cfg.db_url = url;
	cfg.node_id = "n1";
	cfg.log_level = DBCRON_LOG_OFF;
	dbcron_node *n;
	assert_int_equal(dbcron_node_create(&cfg, &n, &err), DBCRON_OK);
	n->st = s; /* the node is not run: its store is ours */

	bool hit = false;
	int failed_inside = 0;
	for (long k = 1; k < 1000; k++) {
		char token[33];
		snprintf(token, sizeof(token), "tok%ld", k);
		store_fire one;
		store_claim_req req = {.node_id = "n1", .token = token,
				       .horizon_ms_ahead = 1000L * 1000 * 1000, .max = 10,
				       .plan = one_fire, .plan_ctx = &one};
		store_claim_result res;
		assert_int_equal(store_claim(s, &req, &res, &err), DBCRON_OK);
		assert_true(res.nruns >= 3); /* and what earlier rounds gave back */
		dbcron__alloc_fail_at(k);
		size_t held = dbloop_take_claim(n, &res, token);
		/* not reached: the Nth allocation is past the intake */
		hit = dbcron__alloc_fail_at_pending() == 0;
		dbcron__alloc_fail_at(0);
		store_claim_result_clear(&res);

		struct count c = {.token = token};
		store_run_filter f = {.since_ms = -1};
		assert_int_equal(store_runs_list(s, &f, count_run, &c, &err), DBCRON_OK);
		if ((size_t)c.claimed != held)
			fail_msg("allocation %ld failing: the node holds %zu run(s), %d are claimed "
				 "under it",
				 k, held, c.claimed);
		assert_int_equal(n->inflight, held);
		assert_int_equal(n->ndoubt, 0);
		if (held == 0)
			failed_inside++;
		drop_held(n);
		if (held)
			assert_int_equal(store_runs_release_claim(s, "n1", token, NULL, &err), DBCRON_OK);
		if (!hit)
			break;
	}
	assert_false(hit);
	assert_true(failed_inside > 0);
	n->st = NULL;
	dbcron_node_free(n);
	store_close(s);
}

/*
 * The reap bound after a stall (node_int.h): a write lock held past the
 * lease fails every node's heartbeat; the first to write again twice in a
 * row must not take over the others, whose retries come a little later.
 */
static void test_reap_bound_after_stall(void **state)
{
	(void)state;
	const int64_t lease = 3000;
	/* steady beats a second apart since t=0: leases that ended before the
	 * previous beat are fair game */
	assert_int_equal(node_reap_bound(9000, 0, 10000, lease), 9000);
	/* the first beat of a node */
	assert_int_equal(node_reap_bound(-1, 10000, 10000, lease), -1);
	/* a 5 s stall from 10 s: the beats at 15.05 s and 15.27 s both work,
	 * the other node's retry is due at 15.34 s; its lease ended at 13 s */
	assert_int_equal(node_reap_bound(15050, 15050, 15270, lease), -1);
	/* still nothing a little under a lease after coming back */
	assert_int_equal(node_reap_bound(17900, 15050, 18000, lease), -1);
	/* a whole lease of writing without a failure: reaping resumes */
	assert_int_equal(node_reap_bound(17050, 15050, 18050, lease), 17050);
	/* a failure in between (healthy_since reset to -1) stops it again */
	assert_int_equal(node_reap_bound(17050, -1, 18050, lease), -1);
}

static int node_state(void *ctx, const store_node_row *row)
{
	char *state = ctx;
	if (strcmp(row->node_id, "n2") == 0)
		snprintf(state, 16, "%s", row->state);
	return 0;
}

/*
 * The heartbeat reaps only leases that ended before the node's previous
 * beat, not before now (dblease.c): a node whose lease has just lapsed (a
 * pause, a slow disk) still has until the reaper's next beat to renew it.
 * No timing in it: n2's lease ends 50 ms after n1's "previous beat" and
 * is over by the beat under test; the next beat, past it, reaps.
 */
static void test_reap_from_previous_beat(void **state)
{
	(void)state;
	char url[600];
	snprintf(url, sizeof(url), "sqlite:%s/r.db", dir);
	dbcron_err err = {0};
	store *s;
	assert_int_equal(store_open(url, &s, &err), DBCRON_OK);
	assert_int_equal(store_migrate(s, NULL, NULL, &err), DBCRON_OK);
	int64_t before;
	assert_int_equal(store_now_ms(s, &before, &err), DBCRON_OK);
	store_node_info b = {.node_id = "n2", .incarnation = "inc-b", .host = "h", .pid = 1,
			     .workers = 1, .lease_ms = 50};
	assert_int_equal(store_node_register(s, &b, &err), DBCRON_OK);

	dbcron_node_config cfg;
	dbcron_node_config_init(&cfg);
	cfg.db_url = url;
	cfg.node_id = "n1";
	cfg.log_level = DBCRON_LOG_OFF;
	dbcron_node *n;
	assert_int_equal(dbcron_node_create(&cfg, &n, &err), DBCRON_OK);
	n->st = s; /* the node is not run: its store is ours */
	assert_int_equal(dbloop_register(n, &err), DBCRON_OK);
	/* n1 has beaten steadily for ten leases, the last time before n2's
	 * lease ended */
	n->prev_beat_db = before;
	n->healthy_since_mono = dbcron__mono_ms() - 10 * n->cfg.lease_ms;
	usleep(100 * 1000); /* n2's lease is over */

	char st[16] = "";
	assert_int_equal(dbloop_heartbeat(n, &err), DBCRON_OK);
	assert_int_equal(store_nodes_list(s, node_state, st, &err), DBCRON_OK);
	assert_string_equal(st, "alive");
	/* the next beat: n2's lease ended before the previous one */
	assert_int_equal(dbloop_heartbeat(n, &err), DBCRON_OK);
	assert_int_equal(store_nodes_list(s, node_state, st, &err), DBCRON_OK);
	assert_string_equal(st, "dead");

	n->st = NULL;
	dbcron_node_free(n);
	store_close(s);
}

/*
 * After a reconnect (store_reconnects() moved: a restart, a failover, a
 * session given up at its deadline) a node reaps nobody for a lease by its
 * own clock, though its heartbeats work and the others' leases ended long
 * before its previous beat: everyone was cut off together, and the others
 * are reconnecting too (issue 25).  SQLite never reconnects: the count the
 * node saw last is made to differ instead.
 */
static void test_no_reap_after_reconnect(void **state)
{
	(void)state;
	char url[600];
	snprintf(url, sizeof(url), "sqlite:%s/rc.db", dir);
	dbcron_err err = {0};
	store *s;
	assert_int_equal(store_open(url, &s, &err), DBCRON_OK);
	assert_int_equal(store_migrate(s, NULL, NULL, &err), DBCRON_OK);
	store_node_info b = {.node_id = "n2", .incarnation = "inc-b", .host = "h", .pid = 1,
			     .workers = 1, .lease_ms = 50};
	assert_int_equal(store_node_register(s, &b, &err), DBCRON_OK);
	dbcron_node_config cfg;
	dbcron_node_config_init(&cfg);
	cfg.db_url = url;
	cfg.node_id = "n1";
	cfg.log_level = DBCRON_LOG_OFF;
	dbcron_node *n;
	assert_int_equal(dbcron_node_create(&cfg, &n, &err), DBCRON_OK);
	n->st = s;
	assert_int_equal(dbloop_register(n, &err), DBCRON_OK);
	usleep(100 * 1000); /* n2's lease is over */
	assert_int_equal(store_now_ms(s, &n->prev_beat_db, &err), DBCRON_OK);
	n->healthy_since_mono = dbcron__mono_ms() - 10 * n->cfg.lease_ms;
	n->reconnects_seen = store_reconnects(s) + 1; /* the handle reconnected */

	char st[16] = "";
	for (int beat = 0; beat < 3; beat++) {
		assert_int_equal(dbloop_heartbeat(n, &err), DBCRON_OK);
		assert_int_equal(store_nodes_list(s, node_state, st, &err), DBCRON_OK);
		assert_string_equal(st, "alive");
	}
	/* a lease of good beats since: reaping resumes */
	n->healthy_since_mono -= n->cfg.lease_ms;
	assert_int_equal(dbloop_heartbeat(n, &err), DBCRON_OK);
	assert_int_equal(store_nodes_list(s, node_state, st, &err), DBCRON_OK);
	assert_string_equal(st, "dead");

	n->st = NULL;
	dbcron_node_free(n);
	store_close(s);
}

/* A node on sqlite:DIR/FILE that is never run: the tests below call the
 * db thread's parts themselves. */
static dbcron_node *quiet_node(const char *file)
{
	char url[600];
	snprintf(url, sizeof(url), "sqlite:%s/%s", dir, file);
	dbcron_node_config cfg;
	dbcron_node_config_init(&cfg);
	cfg.db_url = url;
	cfg.node_id = "n1";
	cfg.log_level = DBCRON_LOG_OFF;
	dbcron_err err = {0};
	dbcron_node *n = NULL;
	assert_int_equal(dbcron_node_create(&cfg, &n, &err), DBCRON_OK);
	return n;
}

/* A start or an end wakes the db thread only when its next look is more
 * than flush_ms away: a wait of at most flush_ms is a look to come, and a
 * wake-up then would put the db thread on the CPU at the instant a burst
 * of fires starts; a longer wait is a sleep the write must cut short. */
static void test_write_wakes_a_sleeper_only(void **state)
{
	(void)state;
	dbcron_node *n = quiet_node("w.db"); /* flush_ms 50, the default */
	assert_int_equal(n->cfg.flush_ms, 50);

	dbloop_wait(n, dbcron__mono_ms() + 1); /* polling: looks again soon */
	pthread_mutex_lock(&n->mu);
	assert_true(n->db_polling);
	dbloop_note_write(n);
	assert_false(n->db_kicked);
	n->db_kicked = true; /* cuts the next wait short */
	pthread_mutex_unlock(&n->mu);

	dbloop_wait(n, dbcron__mono_ms() + 3600000); /* asleep for an hour */
	pthread_mutex_lock(&n->mu);
	assert_false(n->db_polling);
	assert_false(n->db_kicked);
	dbloop_note_write(n);
	assert_true(n->db_kicked);
	pthread_mutex_unlock(&n->mu);
	dbcron_node_free(n);
}

/*
 * The db thread waits out a burst (dbclaim.c): BURST_MIN fires due within
 * a few ms of each other, the first within the lead, hold a claim or a
 * flush until BURST_AFTER_MS past them; fewer fires, a stream, a backlog or
 * a burst past the lead hold nothing; a burst the timer is starting holds
 * the flush too.
 */
static void test_burst_hold(void **state)
{
	(void)state;
	dbcron_node *n = quiet_node("b.db");
	atomic_store(&n->offset_ms, 1000); /* db ms = mono ms + 1000 */
	int64_t now = 5000, db = now + 1000;
	timer_node t[70];
	memset(t, 0, sizeof(t));

	/* 64 fires at now + 100 (one 3 ms later): the claim waits, the flush
	 * (a 10 ms lead) does not yet; 10 ms before, it does */
	for (int i = 0; i < 64; i++)
		assert_int_equal(timer_push(&n->heap, &t[i], db + 100 + (i == 63 ? 3 : 0)), 0);
	assert_int_equal(dbloop_burst_hold(n, now, CLAIM_LEAD_MS), now + 100 + BURST_AFTER_MS);
	assert_int_equal(dbloop_burst_hold(n, now, FLUSH_LEAD_MS), 0);
	assert_int_equal(dbloop_burst_hold(n, now + 92, FLUSH_LEAD_MS), now + 100 + BURST_AFTER_MS);
	/* beyond the lead, and once due (the timer's part, below): nothing */
	assert_int_equal(dbloop_burst_hold(n, now - CLAIM_LEAD_MS - 1, CLAIM_LEAD_MS), 0);
	assert_int_equal(dbloop_burst_hold(n, now + 100, CLAIM_LEAD_MS), 0);

	/* 63 fires are not a burst; nor are 64 spread over 64 ms */
	timer_remove(&n->heap, &t[0]);
	assert_int_equal(dbloop_burst_hold(n, now, CLAIM_LEAD_MS), 0);
	while (timer_pop(&n->heap))
		;
	for (int i = 0; i < 64; i++)
		assert_int_equal(timer_push(&n->heap, &t[i], db + 100 + i), 0);
	assert_int_equal(dbloop_burst_hold(n, now, CLAIM_LEAD_MS), 0);
	while (timer_pop(&n->heap))
		;

	/* the timer starting a burst it reached holds the flush; a batch of
	 * a backlog (its first fire late by more than BURST_AFTER_MS) or a
	 * small one does not */
	pthread_mutex_lock(&n->mu);
	dbloop_burst_started(n, now - 20, 256);
	dbloop_burst_started(n, now - 2, 63);
	pthread_mutex_unlock(&n->mu);
	assert_int_equal(dbloop_burst_hold(n, now, FLUSH_LEAD_MS), 0);
	pthread_mutex_lock(&n->mu);
	dbloop_burst_started(n, now - 2, 64);
	pthread_mutex_unlock(&n->mu);
	assert_int_equal(dbloop_burst_hold(n, now, FLUSH_LEAD_MS), now - 2 + BURST_AFTER_MS);
	assert_int_equal(dbloop_burst_hold(n, now - 2 + BURST_AFTER_MS, FLUSH_LEAD_MS), 0);
	dbcron_node_free(n);
}

int main(void)
{
	if (!mkdtemp(dir))
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_take_claim_oom),
		cmocka_unit_test(test_reap_bound_after_stall),
		cmocka_unit_test(test_reap_from_previous_beat),
		cmocka_unit_test(test_no_reap_after_reconnect),
		cmocka_unit_test(test_write_wakes_a_sleeper_only),
		cmocka_unit_test(test_burst_hold),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	char path[700];
	snprintf(path, sizeof(path), "%s/t.db", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/t.db-wal", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/t.db-shm", dir);
	unlink(path);
	for (const char *const *x = (const char *const[]){"r.db", "r.db-wal", "r.db-shm", "b.db", "b.db-wal", "b.db-shm", "w.db", "w.db-wal", "w.db-shm", "rc.db", "rc.db-wal", "rc.db-shm", NULL}; *x; x++) {
		snprintf(path, sizeof(path), "%s/%s", dir, *x);
		unlink(path);
	}
	rmdir(dir);
	return rc;
}
