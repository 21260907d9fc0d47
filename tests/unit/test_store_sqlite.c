/*
 * The SQLite backend: the store conformance suite on fresh temporary files
 * (conf_test_concurrent_claimers: several processes claiming one file never
 * get the same run, and together they claim every fire), plus bulk loads,
 * schema versions and URLs.
 */
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <stdlib.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>
#include <sqlite3.h>

#include "core/timeutil.h"
#include "store/dialect.h"
#include "store/sqlite/schema.h"
#include "store_conformance.h"
#include "store_conformance_faults.h"
#include "store_conformance_edits.h"
#include "store_conformance_needs.h"
#include "store_conformance_audit.h"

static char conf_dir[256];
static char conf_url_buf[512];
static int conf_seq;

static const char *sqlite_fresh_url(void)
{
	snprintf(conf_url_buf, sizeof(conf_url_buf), "sqlite:%s/db%d.sqlite", conf_dir,
		 ++conf_seq);
	return conf_url_buf;
}

static void sqlite_release_url(const char *url)
{
	char path[600];
	static const char *const sfx[] = {"", "-wal", "-shm"};
	for (int i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s%s", url + 7, sfx[i]);
		unlink(path);
	}
}

/*
 * Loading 20,000 definitions is one transaction of reused statements: the
 * statements are a handful whatever the count (each chunk of 5,000 runs its
 * rows on one prepared statement), and a failure in the last chunk leaves
 * nothing of the first three.
 */
static void test_sqlite_bulk_put(void **state)
{
	conf_ctx *c = *state;
	struct timespec t0, t1;
	uint64_t before = c->s->stmt_count;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	conf_put(c, 20000, "bulk", -1);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	uint64_t used = c->s->stmt_count - before;
	print_message("20000 jobs put in %.0f ms, %llu statements\n",
		      (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6,
		      (unsigned long long)used);
	/* BEGIN, the clock, per chunk a read and an insert, COMMIT */
	assert_true(used <= 12);
	int n = 0;
	CONF_OK(c, store_job_list(c->s, conf_count_job, &n, &c->err));
	assert_int_equal(n, 20000);

	/* The fourth chunk's insert fails, and so does every insert of the
	 * put's three tries after it: the put fails, and not one of the 15,000
	 * jobs of the first three chunks stays. */
	store_fault f = {.stmt = ST_JOBS_INSERT, .nth = 4, .times = 4, .kind = STORE_FAULT_BUSY};
	CONF_OK(c, store_fault_add(c->s, &f, &c->err));
	dbcron_job *jobs = test_calloc(20000, sizeof(*jobs));
	char name[64];
	for (int i = 0; i < 20000; i++) {
		snprintf(name, sizeof(name), "more%05d", i);
		conf_job(&jobs[i], name, -1);
	}
	assert_int_equal(conf_upsert(c, jobs, 20000), DBCRON_EBUSY);
	assert_int_equal(store_fault_hits(c->s), 4);
	store_fault_clear(c->s);
	for (int i = 0; i < 20000; i++)
		dbcron_job_clear(&jobs[i]);
	test_free(jobs);
	n = 0;
	CONF_OK(c, store_job_list(c->s, conf_count_job, &n, &c->err));
	assert_int_equal(n, 20000);
}

/* A database written by a newer dbcron is refused, by init too. */
static void test_sqlite_schema_newer(void **state)
{
	conf_ctx *c = *state;
	sqlite3 *db;
	assert_int_equal(sqlite3_open(c->url + 7, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "INSERT INTO schema_version VALUES (999, 0)",
				      NULL, NULL, NULL),
			 SQLITE_OK);
	sqlite3_close(db);
	assert_int_equal(store_check_schema(c->s, &c->err), DBCRON_ESCHEMA);
	assert_non_null(strstr(c->err.msg, "newer"));
	int from = 0, to = 0;
	assert_int_equal(store_migrate(c->s, &from, &to, &c->err), DBCRON_ESCHEMA);
	assert_int_equal(from, 999);
}

/* The maintenance safety net (issue 23 item 4): an unclaimed SCHEDULED
 * run of a job that no longer exists, however it got there (an older
 * version, a hand edit), ends ABANDONED "job deleted" with the orphan
 * sweep; a claimed one is left to its holder. */
static void test_sqlite_orphans_jobless(void **state)
{
	conf_ctx *c = *state;
	sqlite3 *db;
	assert_int_equal(sqlite3_open(c->url + 7, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db,
				      "INSERT INTO runs(job_id, job_name, fire_at, attempt, state, "
				      "due_at, created_ms) VALUES (4242, 'gone', 1000, 1, 1, 1000, 1);"
				      "INSERT INTO runs(job_id, job_name, fire_at, attempt, state, "
				      "due_at, node, claim_token, created_ms) VALUES (4242, 'gone', "
				      "2000, 1, 1, 2000, 'live', 'tk', 1)",
				      NULL, NULL, NULL),
			 SQLITE_OK);
	sqlite3_close(db);
	size_t n = 0;
	assert_int_equal(store_reap_orphans(c->s, &n, &c->err), DBCRON_OK);
	assert_int_equal(n, 1);
	conf_runs rs = {0};
	conf_list(c, "gone", 0, -1, 0, &rs);
	assert_int_equal(rs.n, 2);
	assert_int_equal(rs.rows[0].state, DBCRON_RUN_ABANDONED);
	assert_string_equal(rs.rows[0].error, "job deleted");
	assert_int_equal(rs.rows[1].state, DBCRON_RUN_SCHEDULED);
	conf_runs_clear(&rs);
}

/* Migration 2 on a database written at version 1: job ids continue past
 * every id the jobs table and the run log have seen, so a deleted job's
 * id is never handed out again. */
static void test_sqlite_migrate_job_ids(void **state)
{
	(void)state;
	char path[512], url[520];
	snprintf(path, sizeof(path), "%s/v1.db", conf_dir);
	snprintf(url, sizeof(url), "sqlite:%s", path);
	unlink(path);
	sqlite3 *db;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "CREATE TABLE schema_version (version INTEGER PRIMARY KEY, "
					  "applied_ms INTEGER NOT NULL); INSERT INTO schema_version "
					  "VALUES (1, 0);",
				      NULL, NULL, NULL),
			 SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, sqlite_migrations[1], NULL, NULL, NULL), SQLITE_OK);
	assert_int_equal(
		sqlite3_exec(db,
			     "INSERT INTO jobs(id, name, kind, spec, misfire, max_catchup, "
			     "misfire_threshold_ms, overlap, node_loss, max_retries, retry_base_ms, "
			     "retry_cap_ms, executor, handler, created_ms, updated_ms) VALUES (5, 'old', "
			     "2, '1s', 1, 100, 5000, 1, 1, 3, 1000, 2000, 2, 'noop', 0, 0);"
			     "INSERT INTO runs(job_id, job_name, fire_at, attempt, state, due_at, "
			     "created_ms) VALUES (9, 'deleted', 1, 1, 1, 1, 0);",
			     NULL, NULL, NULL),
		SQLITE_OK);
	sqlite3_close(db);
	store *s;
	dbcron_err err = {0};
	int from = 0, to = 0;
	assert_int_equal(store_open(url, &s, &err), DBCRON_OK);
	assert_int_equal(store_migrate(s, &from, &to, &err), DBCRON_OK);
	assert_int_equal(from, 1);
	assert_int_equal(to, SQLITE_SCHEMA_VERSION);
	dbcron_job j, got;
	conf_job(&j, "new", 1000);
	size_t cr, up, del;
	assert_int_equal(store_job_put(s, &j, 1, STORE_PUT_UPSERT, false, &cr, &up, &del, &err),
			 DBCRON_OK);
	assert_int_equal(store_job_get(s, "new", &got, &err), DBCRON_OK);
	assert_int_equal(got.id, 10);
	dbcron_job_clear(&got);
	assert_int_equal(store_job_get(s, "old", &got, &err), DBCRON_OK);
	assert_int_equal(got.id, 5);
	dbcron_job_clear(&got);
	dbcron_job_clear(&j);
	store_close(s);
	unlink(path);
}

static void test_sqlite_bad_urls(void **state)
{
	(void)state;
	store *s;
	dbcron_err err = {0};
	assert_int_equal(store_open("sqlite:", &s, &err), DBCRON_EINVAL);
	assert_int_equal(store_open("sqlite:/nonexistent-dir/x/y.db", &s, &err), DBCRON_EIO);
	assert_non_null(strstr(err.msg, "/nonexistent-dir/x/y.db"));
	assert_int_equal(store_open("file.db", &s, &err), DBCRON_EINVAL);
}

/* The plan of statement id of the test's database, its steps joined by
 * "; ", its parameters bound as texts (SQLite takes "10" for an integer
 * where the column's affinity is integer; NULL for a NULL). */
static void sqlite_plan(conf_ctx *c, int id, const char *const *v, int nv, char *plan,
			size_t len)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	char sql[4096];
	size_t n = 0;
	assert_int_equal(sqlite3_open(c->url + 7, &db), SQLITE_OK);
	snprintf(sql, sizeof(sql), "EXPLAIN QUERY PLAN %s", store_sqlite_dialect.sql[id]);
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	for (int i = 0; i < nv; i++) {
		char *end;
		long long x = strtoll(v[i], &end, 10);
		if (*v[i] && !*end)
			sqlite3_bind_int64(st, i + 1, x);
		else
			sqlite3_bind_text(st, i + 1, v[i], -1, SQLITE_STATIC);
	}
	plan[0] = '\0';
	while (sqlite3_step(st) == SQLITE_ROW && n < len - 1)
		n += (size_t)snprintf(plan + n, len - n, "%s; ",
				      (const char *)sqlite3_column_text(st, 3));
	sqlite3_finalize(st);
	sqlite3_close(db);
	print_message("plan: %s\n", plan);
}

/* Issue 23 item 10: one job's runs (runs --job X, a job's last runs) are
 * read through runs_job_name_fire, not by scanning the run log. */
static void test_sqlite_runs_of_one_job_plan(void **state)
{
	const char *v[8] = {"x", "0", "-1", "10", "-1", "", "0", "0"};
	char plan[2048];
	sqlite_plan(*state, ST_RUNS_LIST_JOB, v, 8, plan, sizeof(plan));
	assert_non_null(strstr(plan, "USING INDEX runs_job_name_fire (job_name=?)"));
	assert_null(strstr(plan, "SCAN runs"));
}

/* The names statement text t gives the run table ("runs" and its
 * aliases), as words separated by '|', into out. */
static void runs_aliases(const char *t, char *out, size_t len)
{
	size_t n = (size_t)snprintf(out, len, "|runs|");
	for (const char *p = t; (p = strstr(p, "runs ")); p += 5) {
		if (p > t && (isalnum((unsigned char)p[-1]) || p[-1] == '_'))
			continue;
		const char *a = p + 5;
		size_t k = 0;
		while (isalnum((unsigned char)a[k]) || a[k] == '_')
			k++;
		static const char *const kw[] = {"WHERE", "SET", "JOIN", "ON", "AS", "INDEXED",
						 "ORDER", "GROUP", "LIMIT", "UNION", "LEFT",
						 "CROSS", "USING", "NOT"};
		bool word = k > 0 && k < 16;
		for (size_t i = 0; word && i < sizeof(kw) / sizeof(kw[0]); i++)
			if (strlen(kw[i]) == k && !strncasecmp(a, kw[i], k))
				word = false;
		if (word && n + k + 2 < len)
			n += (size_t)snprintf(out + n, len - n, "%.*s|", (int)k, a);
	}
}

/* No statement reads the run log by a scan of the whole table, except
 * those that read all of it by nature: the run log grows without bound, so
 * a scan in a claim, a busy check or a node's view is a cost that grows
 * with history (an EXPLAIN QUERY PLAN of every statement on 3.40's
 * planner). */
static void test_sqlite_no_run_log_scan(void **state)
{
	conf_ctx *c = *state;
	sqlite3 *db;
	assert_int_equal(sqlite3_open(c->url + 7, &db), SQLITE_OK);
	int scans = 0, checked = 0;
	for (int id = 0; id < ST__COUNT; id++) {
		const char *t = store_sqlite_dialect.sql[id];
		if (!t || strchr(t, '{') || !strstr(t, "runs"))
			continue;
		char sql[8192], aliases[256];
		sqlite3_stmt *st;
		snprintf(sql, sizeof(sql), "EXPLAIN QUERY PLAN %s", t);
		if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
			print_message("cannot explain %s: %s\n", store_stmt_what(id), sqlite3_errmsg(db));
			continue;
		}
		checked++;
		runs_aliases(t, aliases, sizeof(aliases));
		while (sqlite3_step(st) == SQLITE_ROW) {
			const char *d = (const char *)sqlite3_column_text(st, 3), *a;
			if (strncmp(d, "SCAN ", 5) || strstr(d, " USING "))
				continue;
			a = d + 5;
			char w[64];
			snprintf(w, sizeof(w), "|%.*s|", (int)strcspn(a, " "), a);
			if (strstr(aliases, w)) {
				print_message("%s scans the run log: %s\n", store_stmt_what(id), d);
				scans++;
			}
		}
		sqlite3_finalize(st);
	}
	sqlite3_close(db);
	assert_true(checked >= 40); /* the texts were there to check */
	assert_int_equal(scans, 0);
	/* the tags' live runs: the capped jobs' runs, not the log */
	const char *v[1] = {"[\"batch\"]"};
	char plan[2048];
	sqlite_plan(c, ST_TAGS_LIVE, v, 1, plan, sizeof(plan));
	assert_non_null(strstr(plan, "SEARCH r USING INDEX runs_job_state"));
}

/* Issue 30 item 2: the overdue check, which every node runs every 5 s,
 * reads the jobs with a silence limit through jobs_overdue, never by
 * scanning every job. */
static void test_sqlite_overdue_find_plan(void **state)
{
	const char *v[1] = {"1000"};
	char plan[2048];
	sqlite_plan(*state, ST_OVERDUE_FIND, v, 1, plan, sizeof(plan));
	assert_non_null(strstr(plan, "SEARCH j USING INDEX jobs_overdue"));
	assert_null(strstr(plan, "SCAN j"));
}

/* The other connection of test_sqlite_busy_within_lease: holds the write
 * lock it took until a lease has passed since the node's write began. */
typedef struct lock_holder {
	sqlite3 *db;
	int64_t until_ms; /* monotonic */
} lock_holder;

static void *lock_holder_main(void *arg)
{
	lock_holder *h = arg;
	int64_t left;
	while ((left = h->until_ms - dbcron__mono_ms()) > 0)
		conf_sleep_ms(left);
	sqlite3_exec(h->db, "COMMIT", NULL, NULL, NULL);
	return NULL;
}

/* Issue 23 item 20: a node's SQLite connection waits for a write lock held
 * elsewhere less than its lease (store_tune_for_node): a lock held for a
 * whole lease fails the node's write with DBCRON_EBUSY instead of stalling
 * its heartbeat past the lease.  No bound on how long the write took is
 * asserted: the lock is released when a lease has passed, so a wait as
 * long as the lease (or twice it) would get the lock and succeed. */
static void test_sqlite_busy_within_lease(void **state)
{
	conf_ctx *c = *state;
	const int64_t lease = 3000;
	dbcron_job j;
	conf_job(&j, "busy", -1);
	CONF_OK(c, conf_upsert(c, &j, 1));
	dbcron_job_clear(&j);
	CONF_OK(c, store_tune_for_node(c->s, lease, &c->err));

	lock_holder h = {0};
	assert_int_equal(sqlite3_open(c->url + 7, &h.db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(h.db, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
	pthread_t t;
	h.until_ms = dbcron__mono_ms() + lease;
	assert_int_equal(pthread_create(&t, NULL, lock_holder_main, &h), 0);
	int rc = store_job_set_paused(c->s, "busy", true, -1, &c->err);
	pthread_join(t, NULL);
	sqlite3_close(h.db);
	if (rc != DBCRON_EBUSY)
		fail_msg("a write lock held for a lease: want DBCRON_EBUSY, got %d (%s)", rc,
			 c->err.msg);
	/* the lock gone, the same write goes through */
	CONF_OK(c, store_job_set_paused(c->s, "busy", true, -1, &c->err));
}

/* PRAGMA synchronous of a store's own connection (sqlite.c keeps the
 * sqlite3 handle first in its connection): 2 FULL, 1 NORMAL. */
static int sync_of(store *s)
{
	sqlite3 *db = *(sqlite3 **)s->c;
	sqlite3_stmt *st;
	assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA synchronous", -1, &st, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	int v = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	return v;
}

/* Issue 23 item 12: a COMMIT that returned survives a power loss by
 * default (synchronous=FULL: the WAL is synced at every commit);
 * "?synchronous=normal" at the end of the URL is the documented way to
 * trade that for speed, and names the same file. */
static void test_sqlite_synchronous(void **state)
{
	conf_ctx *c = *state;
	assert_int_equal(sync_of(c->s), 2);
	char url[1200];
	store *s;
	snprintf(url, sizeof(url), "%s?synchronous=normal", c->url);
	CONF_OK(c, store_open(url, &s, &c->err));
	assert_int_equal(sync_of(s), 1);
	assert_string_equal(store_file(s), c->url + 7);
	CONF_OK(c, store_check_schema(s, &c->err)); /* the migrated file itself */
	store_close(s);
	snprintf(url, sizeof(url), "%s?synchronous=full", c->url);
	CONF_OK(c, store_open(url, &s, &c->err));
	assert_int_equal(sync_of(s), 2);
	store_close(s);
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(conf_dir, sizeof(conf_dir), "%s/dbcron-store-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(conf_dir)) {
		perror("mkdtemp");
		return 1;
	}
	store_conf_fresh_url = sqlite_fresh_url;
	store_conf_release_url = sqlite_release_url;
	const struct CMUnitTest tests[] = {
		STORE_CONFORMANCE_TESTS,
		STORE_CONFORMANCE_FAULT_TESTS,
		STORE_CONFORMANCE_NEEDS_TESTS,
		STORE_CONFORMANCE_AUDIT_TESTS,
		STORE_CONFORMANCE_EDIT_TESTS,
		CONF_T(test_sqlite_bulk_put),
		CONF_T(test_sqlite_schema_newer),
		CONF_T(test_sqlite_orphans_jobless),
		CONF_T(test_sqlite_runs_of_one_job_plan),
		CONF_T(test_sqlite_overdue_find_plan),
		CONF_T(test_sqlite_no_run_log_scan),
		CONF_T(test_sqlite_busy_within_lease),
		CONF_T(test_sqlite_synchronous),
		cmocka_unit_test(test_sqlite_bad_urls),
		cmocka_unit_test(test_sqlite_migrate_job_ids),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	rmdir(conf_dir);
	return rc;
}
