/*
 * The audit trail on every backend (store.h "The audit trail", issue 29
 * item 2): a row per change with the handle's actor, the action, the job
 * and the before and after of what changed; no env value in it; a change
 * and its row commit together or not at all (the fault seam fails the
 * trail's insert, or the COMMIT, and neither the change nor the row is
 * left); retention in bounded batches.  Included after
 * store_conformance.h; list STORE_CONFORMANCE_AUDIT_TESTS.
 */
#ifndef DBCRON_TEST_STORE_CONFORMANCE_AUDIT_H
#define DBCRON_TEST_STORE_CONFORMANCE_AUDIT_H

#include <jansson.h>

typedef struct conf_audit {
	size_t n;
	char actor[8][128], action[8][32], job[8][64], detail[8][1024];
} conf_audit;

static int conf_audit_one(void *ctx, const store_audit_row *r)
{
	conf_audit *a = ctx;
	size_t i = a->n < 8 ? a->n : 7;
	snprintf(a->actor[i], sizeof(a->actor[i]), "%s", r->actor);
	snprintf(a->action[i], sizeof(a->action[i]), "%s", r->action);
	snprintf(a->job[i], sizeof(a->job[i]), "%s", r->job ? r->job : "(null)");
	snprintf(a->detail[i], sizeof(a->detail[i]), "%s", r->detail);
	a->n++;
	return 0;
}

/* The newest (at most 8) rows of job (NULL: all), oldest first. */
static conf_audit conf_audit_read(conf_ctx *c, const char *job)
{
	conf_audit a = {0};
	store_audit_filter f = {.job = job, .since_ms = -1, .limit = 8};
	CONF_OK(c, store_audit_list(c->s, &f, conf_audit_one, &a, &c->err));
	return a;
}

/* One fault on statement stmt, the next time it runs. */
static void conf_audit_fault_n(conf_ctx *c, int stmt, int times)
{
	store_fault f = {.stmt = stmt, .nth = 1, .times = times, .kind = STORE_FAULT_BUSY};
	CONF_OK(c, store_fault_add(c->s, &f, &c->err));
}

static void conf_audit_fault(conf_ctx *c, int stmt)
{
	conf_audit_fault_n(c, stmt, 1);
}

/* A put that loses a lock conflict is tried again three times (jobput.c):
 * a conflict that outlasts them fails it. */
#define PUT_OUTLASTED 4

/* Each kind of change writes its row, by the handle's actor, with the
 * before and after of what changed and no env value. */
static void conf_test_audit_rows(void **state)
{
	conf_ctx *c = *state;
	dbcron_job j;
	int64_t rid, at;
	store_set_actor(c->s, "test:conf");
	conf_job(&j, "au", 1000);
	j.executor = DBCRON_EXEC_SHELL;
	dbcron__free(j.handler);
	j.handler = NULL;
	j.argc = 2;
	j.argv = dbcron__calloc(3, sizeof(char *));
	j.argv[0] = dbcron__strdup("psql");
	j.argv[1] = dbcron__strdup("postgresql://u:pw-hidden@db/x");
	j.env_file = dbcron__strdup("/etc/dbcron/au.env");
	j.envc = 1;
	j.env = dbcron__calloc(2, sizeof(char *));
	j.env[0] = dbcron__strdup("KEY=hidden-value");
	store_audit_verb(c->s, "add");
	CONF_OK(c, conf_upsert(c, &j, 1));
	conf_audit a = conf_audit_read(c, "au");
	assert_int_equal(a.n, 1);
	assert_string_equal(a.actor[0], "test:conf");
	assert_string_equal(a.action[0], "add");
	assert_non_null(strstr(a.detail[0], "\"every\":{\"before\":null,\"after\":\"1s\"}"));
	assert_non_null(strstr(a.detail[0], "KEY=***"));
	assert_null(strstr(a.detail[0], "hidden-value"));
	assert_null(strstr(a.detail[0], "pw-hidden"));
	assert_non_null(strstr(a.detail[0], "postgresql://u:"));
	assert_non_null(strstr(a.detail[0], "/etc/dbcron/au.env")); /* a path is no secret */
	/* the verb was one put's: the next put is a plain "put" */
	j.max_retries = 7;
	CONF_OK(c, conf_upsert(c, &j, 1));
	a = conf_audit_read(c, "au");
	assert_int_equal(a.n, 2);
	assert_string_equal(a.action[1], "put");
	assert_string_equal(a.detail[1], "{\"changes\":{\"retries\":{\"before\":3,\"after\":7}}}");
	/* unchanged: no row */
	CONF_OK(c, conf_upsert(c, &j, 1));
	assert_int_equal(conf_audit_read(c, "au").n, 2);
	dbcron_job_clear(&j);
	CONF_OK(c, store_job_set_paused(c->s, "au", true, -1, &c->err));
	CONF_OK(c, store_job_trigger(c->s, "au", &rid, &at, &c->err));
	CONF_OK(c, store_job_rename(c->s, "au", "au2", &c->err));
	a = conf_audit_read(c, NULL);
	assert_int_equal(a.n, 5);
	assert_string_equal(a.action[2], "pause");
	assert_string_equal(a.detail[2],
			    "{\"changes\":{\"paused\":{\"before\":false,\"after\":true}}}");
	assert_string_equal(a.action[3], "trigger");
	assert_string_equal(a.action[4], "rename");
	assert_string_equal(a.job[4], "au2");
	CONF_OK(c, store_job_delete(c->s, "au2", &c->err));
	a = conf_audit_read(c, "au2");
	assert_string_equal(a.action[a.n - 1], "delete");
	assert_non_null(strstr(a.detail[a.n - 1], "\"retries\":{\"before\":7,\"after\":null}"));
	assert_string_equal(a.actor[a.n - 1], "test:conf");
}

/* A change and its row commit together: a failed insert of the row
 * undoes the change, a failed COMMIT both. */
static void conf_test_audit_rolls_back(void **state)
{
	conf_ctx *c = *state;
	dbcron_job j, got;
	int64_t rid, at;
	conf_job(&j, "rb", 1000);
	CONF_OK(c, conf_upsert(c, &j, 1));
	size_t n = conf_audit_read(c, NULL).n;
	assert_int_equal(n, 1);

	conf_audit_fault(c, ST_AUDIT_INSERT);
	assert_int_equal(store_job_set_paused(c->s, "rb", true, -1, &c->err), DBCRON_EBUSY);
	conf_audit_fault(c, ST_COMMIT);
	assert_int_equal(store_job_set_paused(c->s, "rb", true, -1, &c->err), DBCRON_EBUSY);
	CONF_OK(c, store_job_get(c->s, "rb", &got, &c->err));
	assert_false(got.paused); /* the pause went with its row */
	dbcron_job_clear(&got);

	j.max_retries = 9;
	conf_audit_fault_n(c, ST_AUDIT_INSERT, PUT_OUTLASTED);
	assert_int_equal(conf_upsert(c, &j, 1), DBCRON_EBUSY);
	CONF_OK(c, store_job_get(c->s, "rb", &got, &c->err));
	assert_int_equal(got.max_retries, 3);
	dbcron_job_clear(&got);
	dbcron_job_clear(&j);

	conf_audit_fault(c, ST_AUDIT_INSERT);
	assert_int_equal(store_job_trigger(c->s, "rb", &rid, &at, &c->err), DBCRON_EBUSY);
	conf_audit_fault(c, ST_AUDIT_INSERT);
	assert_int_equal(store_job_rename(c->s, "rb", "rb2", &c->err), DBCRON_EBUSY);
	conf_audit_fault(c, ST_AUDIT_INSERT);
	assert_int_equal(store_job_delete(c->s, "rb", &c->err), DBCRON_EBUSY);
	CONF_OK(c, store_job_get(c->s, "rb", &got, &c->err));
	dbcron_job_clear(&got);
	conf_runs rs = {.n = 0};
	conf_list(c, "rb", 0, -1, 0, &rs);
	assert_int_equal(rs.n, 0); /* the trigger's run went with its row */
	conf_runs_clear(&rs);
	assert_int_equal(conf_audit_read(c, NULL).n, n); /* and no row is left */

	/* a node's stop: the row is the node's, whoever's handle it is */
	store_node_info ni = {.node_id = "an1", .incarnation = "i1", .host = "h", .pid = 1,
			      .workers = 1, .lease_ms = 30000};
	CONF_OK(c, store_node_register(c->s, &ni, &c->err));
	conf_audit_fault(c, ST_AUDIT_INSERT);
	assert_int_equal(store_node_stop(c->s, "an1", "i1", &c->err), DBCRON_EBUSY);
	assert_int_equal(conf_audit_read(c, NULL).n, n);
	CONF_OK(c, store_node_stop(c->s, "an1", "i1", &c->err));
	conf_audit a = conf_audit_read(c, NULL);
	assert_int_equal(a.n, n + 1);
	assert_string_equal(a.actor[n], "node:an1");
	assert_string_equal(a.action[n], "node-stop");
	assert_string_equal(a.job[n], "(null)");
}

/* Retention: the oldest first, a bounded batch a call. */
/* A prune deletes jobs the batch does not name: each one's row, every key
 * to nothing, as a deleted job's, in the prune's transaction; the jobs
 * kept get none. */
static void conf_test_audit_pruned_jobs(void **state)
{
	conf_ctx *c = *state;
	size_t cr, up, del;
	dbcron_job keep;
	conf_put(c, 3, "pr", 1000); /* pr0000 .. pr0002 */
	conf_job(&keep, "pr0001", 1000);
	store_set_actor(c->s, "test:prune");
	store_audit_verb(c->s, "apply");
	CONF_OK(c, store_job_put(c->s, &keep, 1, STORE_PUT_UPSERT, true, &cr, &up, &del, &c->err));
	assert_int_equal(del, 2);
	const char *gone[] = {"pr0000", "pr0002"};
	for (size_t i = 0; i < 2; i++) {
		conf_audit a = conf_audit_read(c, gone[i]);
		assert_int_equal(a.n, 2); /* its add, then its prune */
		assert_string_equal(a.actor[1], "test:prune");
		assert_string_equal(a.action[1], "apply");
		assert_non_null(strstr(a.detail[1], "\"every\":{\"before\":\"1s\",\"after\":null}"));
		assert_non_null(strstr(a.detail[1], "\"pruned\":true"));
	}
	assert_int_equal(conf_audit_read(c, "pr0001").n, 1); /* kept, unchanged: its add only */
	dbcron_job_clear(&keep);
}

/* The newest row of the trail (all jobs), or fails. */
static void conf_audit_last(conf_ctx *c, size_t want_n, const char *action, const char *detail)
{
	conf_audit a = conf_audit_read(c, NULL);
	assert_int_equal(a.n, want_n);
	assert_string_equal(a.action[a.n - 1], action);
	assert_string_equal(a.job[a.n - 1], "(null)");
	if (!strstr(a.detail[a.n - 1], detail))
		fail_msg("row '%s' has no '%s'", a.detail[a.n - 1], detail);
}

/* Caps and calendars change what jobs do, so their changes are in the
 * trail too: a row per change that happened, none for one that did not
 * (an unchanged cap, an unknown tag, a missing one), and the row goes
 * with its change. */
static void conf_test_audit_caps_calendars(void **state)
{
	conf_ctx *c = *state;
	bool deleted = true;
	dbcron_job j;
	conf_job(&j, "tagged", 1000);
	j.tags = dbcron__strdup("heavy");
	CONF_OK(c, conf_upsert(c, &j, 1));
	dbcron_job_clear(&j);
	store_set_actor(c->s, "test:caps");
	CONF_OK(c, store_tag_set(c->s, "heavy", 2, &c->err));
	conf_audit_last(c, 2, "tag-set", "\"max_running\":{\"before\":null,\"after\":2}");
	CONF_OK(c, store_tag_set(c->s, "heavy", 2, &c->err)); /* unchanged: no row */
	assert_int_equal(store_tag_set(c->s, "nobody", 2, &c->err), DBCRON_EINVAL);
	assert_non_null(strstr(c->err.msg, "unknown tag 'nobody'"));
	assert_int_equal(conf_audit_read(c, NULL).n, 2);
	conf_audit_fault(c, ST_AUDIT_INSERT);
	assert_int_equal(store_tag_set(c->s, "heavy", 5, &c->err), DBCRON_EBUSY);
	CONF_OK(c, store_tag_set(c->s, "heavy", 3, &c->err));
	conf_audit_last(c, 3, "tag-set", "\"before\":2,\"after\":3}");
	assert_non_null(strstr(conf_audit_read(c, NULL).detail[2], "\"tag\":\"heavy\""));
	CONF_OK(c, store_tag_delete(c->s, "heavy", &deleted, &c->err));
	assert_true(deleted);
	conf_audit_last(c, 4, "tag-delete", "\"before\":3,\"after\":null}");
	CONF_OK(c, store_tag_delete(c->s, "heavy", &deleted, &c->err));
	assert_false(deleted);

	CONF_OK(c, store_calendar_add(c->s, "hol", "2026-12-25\n2027-01-01\n", &c->err));
	conf_audit_last(c, 5, "calendar-add", "\"days\":2");
	conf_audit_fault(c, ST_AUDIT_INSERT);
	assert_int_equal(store_calendar_delete(c->s, "hol", &c->err), DBCRON_EBUSY);
	store_calendar cal;
	CONF_OK(c, store_calendar_get(c->s, "hol", &cal, &c->err)); /* still there */
	store_calendar_clear(&cal);
	CONF_OK(c, store_calendar_delete(c->s, "hol", &c->err));
	conf_audit_last(c, 6, "calendar-delete", "\"calendar\":\"hol\"");
	assert_string_equal(conf_audit_read(c, NULL).actor[5], "test:caps");
}

/* A cap-holding tag in a batch: the caps of a put (a `job apply`
 * document's "tags") commit with its jobs or not at all. */
static int conf_put_caps(conf_ctx *c, const char *job, const char *tags,
			 store_put_caps *caps)
{
	dbcron_job j;
	size_t cr, up, del;
	conf_job(&j, job, 1000);
	j.tags = tags ? dbcron__strdup(tags) : NULL;
	store_put_tags(c->s, caps);
	int rc = store_job_put(c->s, &j, 1, STORE_PUT_UPSERT, caps && caps->prune, &cr, &up, &del,
			       &c->err);
	dbcron_job_clear(&j);
	return rc;
}

/* The caps of a put are written in its transaction, after its jobs: a
 * tag only the batch's new job carries is known; a cap on a tag no job
 * carries refuses the whole put; a failed COMMIT leaves neither the job
 * nor the cap; prune deletes the caps not given; each change a row. */
static void conf_test_put_caps(void **state)
{
	conf_ctx *c = *state;
	dbcron_job got;
	store_tag_cap two[] = {{"heavy", 2}, {"nobody", 1}};
	store_put_caps caps = {.v = two, .n = 2};
	assert_int_equal(conf_put_caps(c, "pc1", "heavy", &caps), DBCRON_EINVAL);
	assert_non_null(strstr(c->err.msg, "unknown tag 'nobody'"));
	assert_int_equal(store_job_get(c->s, "pc1", &got, &c->err), DBCRON_ENOTFOUND);
	assert_int_equal(conf_audit_read(c, NULL).n, 0);

	caps.n = 1;
	conf_audit_fault_n(c, ST_COMMIT, PUT_OUTLASTED);
	assert_int_equal(conf_put_caps(c, "pc1", "heavy", &caps), DBCRON_EBUSY);
	assert_int_equal(caps.set, 0);
	assert_int_equal(store_job_get(c->s, "pc1", &got, &c->err), DBCRON_ENOTFOUND);
	assert_int_equal(conf_audit_read(c, NULL).n, 0);

	/* one lost COMMIT: the second try writes it all, and its rows once */
	conf_audit_fault(c, ST_COMMIT);
	CONF_OK(c, conf_put_caps(c, "pc1", "heavy", &caps)); /* the new job carries it */
	assert_int_equal(caps.set, 1);
	conf_audit_last(c, 2, "tag-set", "\"after\":2}");
	CONF_OK(c, conf_put_caps(c, "pc2", "light", NULL)); /* no caps: none touched */
	CONF_OK(c, store_tag_set(c->s, "light", 4, &c->err));
	size_t n = conf_audit_read(c, NULL).n;
	CONF_OK(c, conf_put_caps(c, "pc1", "heavy", &caps)); /* unchanged: no row */
	assert_int_equal(caps.set, 0);
	assert_int_equal(conf_audit_read(c, NULL).n, n);

	/* prune: pc2 goes, and light's cap with it (not given) */
	caps.prune = true;
	CONF_OK(c, conf_put_caps(c, "pc1", "heavy", &caps));
	assert_int_equal(caps.deleted, 1);
	assert_int_equal(store_job_get(c->s, "pc2", &got, &c->err), DBCRON_ENOTFOUND);
	bool deleted;
	CONF_OK(c, store_tag_delete(c->s, "light", &deleted, &c->err));
	assert_false(deleted);
	CONF_OK(c, store_tag_delete(c->s, "heavy", &deleted, &c->err));
	assert_true(deleted);
}

static void conf_test_audit_prune(void **state)
{
	conf_ctx *c = *state;
	int64_t d = -1;
	conf_put(c, 3, "ap", 1000);
	conf_put(c, 2, "aq", 1000);
	assert_int_equal(conf_audit_read(c, NULL).n, 5);
	conf_sleep_ms(5);
	int64_t now = conf_now(c);
	CONF_OK(c, store_prune_audit_some(c->s, now - 3600000, 10, &d, &c->err));
	assert_int_equal(d, 0); /* nothing that old */
	CONF_OK(c, store_prune_audit_some(c->s, now, 2, &d, &c->err));
	assert_int_equal(d, 2);
	conf_audit a = conf_audit_read(c, NULL);
	assert_int_equal(a.n, 3);
	CONF_OK(c, store_prune_audit_some(c->s, now, 10, &d, &c->err));
	assert_int_equal(d, 3);
	assert_int_equal(store_prune_audit_some(c->s, now, 0, &d, &c->err), DBCRON_EINVAL);
}

#define STORE_CONFORMANCE_AUDIT_TESTS                                            \
	CONF_T(conf_test_audit_rows), CONF_T(conf_test_audit_rolls_back),        \
	CONF_T(conf_test_audit_prune), CONF_T(conf_test_audit_pruned_jobs),      \
	CONF_T(conf_test_audit_caps_calendars), CONF_T(conf_test_put_caps)

#endif
