/*
 * The PostgreSQL backend against a real server (env DBCRON_TEST_PG, a
 * libpq conninfo of a server where we may CREATE DATABASE).  Every test gets
 * a fresh database dbcron_t_<pid>_<n>, dropped at the end.
 *
 * PG-only properties (concurrent claimers are the conformance suite's
 * conf_test_concurrent_claimers, on every backend): SKIP LOCKED does not
 * wait for a row another transaction holds; passwords never reach error
 * text; the handle reconnects after a server restart (needs
 * DBCRON_TEST_PGDIR, the scripts/pg-tmp.sh directory of that server).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "store_conformance.h"
#include "store_conformance_faults.h"
#include "store_conformance_edits.h"
#include "store_conformance_needs.h"
#include "store_conformance_audit.h"

#include "core/alloc.h"
#include "core/timeutil.h"
#include "store/dialect.h"
#include "store/store.h"

static const char *admin_conninfo;
static int db_seq;

/* ---- databases per test ---------------------------------------------- */

/* conninfo with dbname replaced, as key='value' pairs (works whether the
 * admin string was a URI or key=value). */
static void conninfo_for(const char *dbname, char *buf, size_t len)
{
	char *perr = NULL;
	PQconninfoOption *o = PQconninfoParse(admin_conninfo, &perr);
	assert_non_null(o);
	size_t off = 0;
	for (PQconninfoOption *p = o; p->keyword; p++) {
		if (!p->val || !*p->val || strcmp(p->keyword, "dbname") == 0)
			continue;
		off += (size_t)snprintf(buf + off, len - off, "%s='%s' ", p->keyword, p->val);
		assert_true(off < len);
	}
	snprintf(buf + off, len - off, "dbname='%s'", dbname);
	PQconninfoFree(o);
}

static void admin_exec(const char *sql)
{
	PGconn *c = PQconnectdb(admin_conninfo);
	assert_int_equal(PQstatus(c), CONNECTION_OK);
	PGresult *r = PQexec(c, sql);
	if (PQresultStatus(r) != PGRES_COMMAND_OK)
		fail_msg("%s: %s", sql, PQerrorMessage(c));
	PQclear(r);
	PQfinish(c);
}

typedef struct tdb {
	char name[64];
	char url[1024];
} tdb;

static void tdb_create(tdb *d)
{
	char sql[128];
	snprintf(d->name, sizeof(d->name), "dbcron_t_%d_%d", (int)getpid(), ++db_seq);
	snprintf(sql, sizeof(sql), "CREATE DATABASE %.64s", d->name);
	admin_exec(sql);
	conninfo_for(d->name, d->url, sizeof(d->url));
}

static void tdb_drop(tdb *d)
{
	char sql[128];
	snprintf(sql, sizeof(sql), "DROP DATABASE IF EXISTS %.64s WITH (FORCE)", d->name);
	admin_exec(sql);
}

/* Hooks of store_conformance.h: one fresh database per conformance test. */
static tdb conf_dbs[256];
static int conf_ndbs;

static const char *pg_fresh_url(void)
{
	assert_true(conf_ndbs < (int)(sizeof(conf_dbs) / sizeof(conf_dbs[0])));
	tdb *d = &conf_dbs[conf_ndbs++];
	tdb_create(d);
	return d->url;
}

static void pg_release_url(const char *url)
{
	for (int i = 0; i < conf_ndbs; i++)
		if (conf_dbs[i].name[0] && strcmp(conf_dbs[i].url, url) == 0) {
			tdb_drop(&conf_dbs[i]);
			conf_dbs[i].name[0] = '\0';
		}
}

static store *open_migrated(const tdb *d)
{
	store *s = NULL;
	dbcron_err err = {0};
	int rc = store_open(d->url, &s, &err);
	if (rc)
		fail_msg("open: %s", err.msg);
	rc = store_migrate(s, NULL, NULL, &err);
	if (rc)
		fail_msg("migrate: %s", err.msg);
	return s;
}

static void no_notices(void *arg, const char *msg)
{
	(void)arg;
	(void)msg;
}

/* A direct libpq connection for checks by query. */
static PGconn *raw(const tdb *d)
{
	PGconn *c = PQconnectdb(d->url);
	assert_int_equal(PQstatus(c), CONNECTION_OK);
	PQsetNoticeProcessor(c, no_notices, NULL);
	return c;
}

static int64_t q_i64(PGconn *c, const char *sql)
{
	PGresult *r = PQexec(c, sql);
	if (PQresultStatus(r) != PGRES_TUPLES_OK)
		fail_msg("%s: %s", sql, PQerrorMessage(c));
	int64_t v = PQgetisnull(r, 0, 0) ? -1 : strtoll(PQgetvalue(r, 0, 0), NULL, 10);
	PQclear(r);
	return v;
}

/* ---- jobs and a test planner ----------------------------------------- */

static void every_job(dbcron_job *j, const char *name, int64_t interval_ms, int64_t first)
{
	dbcron_job_init(j);
	j->name = dbcron__strdup(name);
	j->kind = DBCRON_SCHED_EVERY;
	j->spec = dbcron__strdup("1s");
	j->interval_ms = interval_ms;
	j->anchor_ms = first;
	j->executor = DBCRON_EXEC_HANDLER;
	j->handler = dbcron__strdup("noop");
	j->next_fire_at = first;
}

/* Every instant up to the horizon as a SCHEDULED fire; the next one after. */
typedef struct planner {
	store_fire fires[64];
} planner;

static int plan_every(void *ctx, const dbcron_job *job, int64_t now_ms, int64_t horizon_ms,
		      store_plan *out)
{
	planner *p = ctx;
	(void)now_ms;
	out->fires = p->fires;
	out->nfires = 0;
	int64_t t = job->next_fire_at;
	while (t <= horizon_ms && out->nfires < 64) {
		store_fire *f = &p->fires[out->nfires++];
		memset(f, 0, sizeof(*f));
		f->fire_at = f->due_at = t;
		f->state = DBCRON_RUN_SCHEDULED;
		t += job->interval_ms;
	}
	out->next_fire_at = t;
	return DBCRON_OK;
}

static int64_t db_now(store *s)
{
	int64_t now = 0;
	dbcron_err err = {0};
	assert_int_equal(store_now_ms(s, &now, &err), DBCRON_OK);
	return now;
}

/* ---- tests ------------------------------------------------------------ */

static void test_mask_url(void **state)
{
	(void)state;
	static const struct { const char *in, *out; } cases[] = {
		{"postgresql://u:s3cret@h:5432/db", "postgresql://u:***@h:5432/db"},
		{"postgres://u:s3cret@h/db?sslmode=disable&password=s3cret",
		 "postgres://u:***@h/db?sslmode=disable&password=***"},
		{"postgresql://u@h/db?password=s3cret", "postgresql://u@h/db?password=***"},
		{"postgresql://h/db", "postgresql://h/db"},
		{"postgresql://u:p%40ss@h/db", "postgresql://u:***@h/db"},
		{"host=h password=s3cret dbname=x", "host=h password=*** dbname=x"},
		{"host=h password = 's3 c\\'ret' dbname=x", "host=h password = *** dbname=x"},
		{"password=s3cret", "password=***"},
		{"host=/tmp/x port=5 user=postgres", "host=/tmp/x port=5 user=postgres"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char buf[256];
		size_t n = store_mask_url(cases[i].in, buf, sizeof(buf));
		assert_string_equal(buf, cases[i].out);
		assert_int_equal(n, strlen(cases[i].out));
	}
	char small[8];
	size_t n = store_mask_url("password=s3cret", small, sizeof(small));
	assert_int_equal(n, strlen("password=***"));
	assert_string_equal(small, "passwor");
}

static void test_password_never_in_errors(void **state)
{
	(void)state;
	static const char *urls[] = {
		"postgresql://postgres:Sup3rSecretPw@127.0.0.1:1/nodb?connect_timeout=2",
		"host=127.0.0.1 port=1 password=Sup3rSecretPw connect_timeout=2",
		"postgresql://postgres@127.0.0.1:1/nodb?password=Sup3rSecretPw&connect_timeout=2",
	};
	for (size_t i = 0; i < sizeof(urls) / sizeof(urls[0]); i++) {
		store *s = NULL;
		dbcron_err err = {0};
		int rc = store_open(urls[i], &s, &err);
		assert_int_equal(rc, DBCRON_ECONN);
		assert_null(s);
		assert_null(strstr(err.msg, "Sup3rSecretPw"));
		assert_non_null(strstr(err.msg, "***"));
	}
	/* A malformed string is EINVAL, still without the password. */
	store *s = NULL;
	dbcron_err err = {0};
	assert_int_equal(store_open("host=h password=Sup3rSecretPw bogus", &s, &err),
			 DBCRON_EINVAL);
	assert_null(strstr(err.msg, "Sup3rSecretPw"));

	/* A server that rejects the password: the message is scrubbed. */
	tdb d;
	tdb_create(&d);
	PGconn *c = raw(&d);
	PQclear(PQexec(c, "DROP ROLE IF EXISTS dbcron_pw_user"));
	PGresult *r = PQexec(c, "CREATE ROLE dbcron_pw_user LOGIN PASSWORD 'Right0ne'");
	assert_int_equal(PQresultStatus(r), PGRES_COMMAND_OK);
	PQclear(r);
	PQfinish(c);
	char url[1200];
	snprintf(url, sizeof(url), "%s user=dbcron_pw_user password=Sup3rSecretPw", d.url);
	int rc = store_open(url, &s, &err);
	if (rc == DBCRON_OK) {
		/* trust authentication: the password is not checked; the
		 * masked form is still what the handle would print. */
		store_close(s);
	} else {
		assert_int_equal(rc, DBCRON_ECONN);
		assert_null(strstr(err.msg, "Sup3rSecretPw"));
	}
	admin_exec("DROP ROLE IF EXISTS dbcron_pw_user");
	tdb_drop(&d);
}

static void test_schema_check_and_concurrent_init(void **state)
{
	(void)state;
	tdb d;
	tdb_create(&d);
	store *s = NULL;
	dbcron_err err = {0};
	assert_int_equal(store_open(d.url, &s, &err), DBCRON_OK);
	assert_int_equal(store_check_schema(s, &err), DBCRON_ESCHEMA);
	assert_non_null(strstr(err.msg, "no dbcron schema"));

	/* Four `dbcron init` at once: each migration applied once. */
	pid_t kids[4];
	for (int i = 0; i < 4; i++) {
		kids[i] = fork();
		assert_true(kids[i] >= 0);
		if (kids[i] == 0) {
			store *k = NULL;
			dbcron_err e = {0};
			int from = -1, to = -1;
			if (store_open(d.url, &k, &e) || store_migrate(k, &from, &to, &e)) {
				fprintf(stderr, "child migrate: %s\n", e.msg);
				_exit(1);
			}
			store_close(k);
			_exit(to == store_pg_dialect.schema_version ? 0 : 2);
		}
	}
	for (int i = 0; i < 4; i++) {
		int st;
		assert_int_equal(waitpid(kids[i], &st, 0), kids[i]);
		assert_true(WIFEXITED(st));
		assert_int_equal(WEXITSTATUS(st), 0);
	}
	assert_int_equal(store_check_schema(s, &err), DBCRON_OK);
	int from = -1, to = -1;
	assert_int_equal(store_migrate(s, &from, &to, &err), DBCRON_OK);
	assert_int_equal(from, store_pg_dialect.schema_version);
	assert_int_equal(to, store_pg_dialect.schema_version);
	PGconn *c = raw(&d);
	assert_int_equal(q_i64(c, "SELECT count(*) FROM schema_version"), store_pg_dialect.schema_version);
	/* A newer schema than ours is refused. */
	PQclear(PQexec(c, "INSERT INTO schema_version VALUES (999, 0)"));
	assert_int_equal(store_check_schema(s, &err), DBCRON_ESCHEMA);
	assert_int_equal(store_migrate(s, NULL, NULL, &err), DBCRON_ESCHEMA);
	PQfinish(c);
	store_close(s);
	tdb_drop(&d);
}

static void test_job_put_and_views(void **state)
{
	(void)state;
	tdb d;
	tdb_create(&d);
	store *s = open_migrated(&d);
	dbcron_err err = {0};
	const size_t N = 100000;
	dbcron_job *jobs = dbcron__calloc(N, sizeof(*jobs));
	assert_non_null(jobs);
	for (size_t i = 0; i < N; i++) {
		char name[32];
		snprintf(name, sizeof(name), "job-%06zu", i);
		every_job(&jobs[i], name, 1000, 1000000);
		if (i % 2) {
			/* shell jobs carry argv as JSON, quotes and all */
			dbcron__free(jobs[i].handler);
			jobs[i].handler = NULL;
			jobs[i].executor = DBCRON_EXEC_SHELL;
			jobs[i].argv = dbcron__calloc(3, sizeof(char *));
			jobs[i].argv[0] = dbcron__strdup("/bin/echo");
			jobs[i].argv[1] = dbcron__strdup("a \"quoted\" \\ 'arg' ü");
			jobs[i].argc = 2;
		}
	}
	size_t c = 0, u = 0, del = 0;
	int64_t t0 = dbcron__mono_ms();
	assert_int_equal(store_job_put(s, jobs, N, STORE_PUT_CREATE, false, &c, &u, &del, &err),
			 DBCRON_OK);
	int64_t t1 = dbcron__mono_ms();
	print_message("job_put CREATE of %zu jobs: %" PRId64 " ms\n", N, t1 - t0);
	assert_int_equal(c, N);

	/* CREATE again: names the clash, writes nothing. */
	dbcron_job extra[2];
	every_job(&extra[0], "brand-new", 1000, 5);
	every_job(&extra[1], "job-000007", 1000, 5);
	assert_int_equal(store_job_put(s, extra, 2, STORE_PUT_CREATE, false, &c, &u, &del, &err),
			 DBCRON_EEXISTS);
	assert_non_null(strstr(err.msg, "job-000007"));
	dbcron_job got;
	assert_int_equal(store_job_get(s, "brand-new", &got, &err), DBCRON_ENOTFOUND);

	assert_int_equal(store_job_get(s, "job-000003", &got, &err), DBCRON_OK);
	assert_int_equal(got.executor, DBCRON_EXEC_SHELL);
	assert_int_equal(got.argc, 2);
	assert_string_equal(got.argv[1], "a \"quoted\" \\ 'arg' ü");
	assert_null(got.argv[2]);
	assert_int_equal(got.next_fire_at, 1000000);
	dbcron_job_clear(&got);

	/* UPSERT of the same definitions: nothing changes. */
	t0 = dbcron__mono_ms();
	assert_int_equal(store_job_put(s, jobs, N, STORE_PUT_UPSERT, false, &c, &u, &del, &err),
			 DBCRON_OK);
	print_message("job_put UPSERT (unchanged) of %zu jobs: %" PRId64 " ms\n", N,
		      dbcron__mono_ms() - t0);
	assert_int_equal(c, 0);
	assert_int_equal(u, N);

	/* Changed schedule takes the new next fire; a changed command keeps
	 * the old one; prune drops everything not listed. */
	PGconn *pc = raw(&d);
	PQclear(PQexec(pc, "UPDATE jobs SET next_fire_at = 42 WHERE name IN ('job-000001', 'job-000002')"));
	dbcron_job two[3];
	every_job(&two[0], "job-000001", 1000, 7);
	two[0].max_retries = 9; /* same schedule, other policy */
	every_job(&two[1], "job-000002", 2000, 7);
	dbcron__free(two[1].spec);
	two[1].spec = dbcron__strdup("2s");
	every_job(&two[2], "job-new", 1000, 7);
	assert_int_equal(store_job_put(s, two, 3, STORE_PUT_UPSERT, true, &c, &u, &del, &err),
			 DBCRON_OK);
	assert_int_equal(c, 1);
	assert_int_equal(u, 2);
	assert_int_equal(del, N - 2);
	assert_int_equal(store_job_get(s, "job-000001", &got, &err), DBCRON_OK);
	assert_int_equal(got.next_fire_at, 42);
	assert_int_equal(got.max_retries, 9);
	assert_int_equal(got.executor, DBCRON_EXEC_HANDLER);
	assert_null(got.argv);
	dbcron_job_clear(&got);
	assert_int_equal(store_job_get(s, "job-000002", &got, &err), DBCRON_OK);
	assert_int_equal(got.next_fire_at, 7);
	assert_int_equal(got.interval_ms, 2000);
	dbcron_job_clear(&got);
	assert_int_equal(q_i64(pc, "SELECT count(*) FROM jobs"), 3);

	/* Pause keeps next_fire_at, resume sets it; delete; not found. */
	assert_int_equal(store_job_set_paused(s, "job-new", true, -1, &err), DBCRON_OK);
	assert_int_equal(store_job_set_paused(s, "job-new", false, 1234, &err), DBCRON_OK);
	assert_int_equal(store_job_get(s, "job-new", &got, &err), DBCRON_OK);
	assert_false(got.paused);
	assert_int_equal(got.next_fire_at, 1234);
	dbcron_job_clear(&got);
	assert_int_equal(store_job_set_paused(s, "nope", true, -1, &err), DBCRON_ENOTFOUND);
	assert_int_equal(store_job_delete(s, "job-new", &err), DBCRON_OK);
	assert_int_equal(store_job_delete(s, "job-new", &err), DBCRON_ENOTFOUND);

	for (size_t i = 0; i < N; i++)
		dbcron_job_clear(&jobs[i]);
	dbcron__free(jobs);
	for (int i = 0; i < 2; i++)
		dbcron_job_clear(&extra[i]);
	for (int i = 0; i < 3; i++)
		dbcron_job_clear(&two[i]);
	PQfinish(pc);
	store_close(s);
	tdb_drop(&d);
}

static void on_alarm(int sig)
{
	(void)sig;
	static const char msg[] = "test_store_pg: SKIP LOCKED claim blocked (hang guard)\n";
	ssize_t w = write(2, msg, sizeof(msg) - 1);
	(void)w;
	_exit(99);
}

static void test_skip_locked_does_not_block(void **state)
{
	(void)state;
	tdb d;
	tdb_create(&d);
	store *s = open_migrated(&d);
	dbcron_err err = {0};
	int64_t now = db_now(s);
	dbcron_job jobs[2];
	every_job(&jobs[0], "held", 60000, now - 10);
	every_job(&jobs[1], "free", 60000, now - 10);
	assert_int_equal(store_job_put(s, jobs, 2, STORE_PUT_CREATE, false, NULL, NULL, NULL, &err),
			 DBCRON_OK);
	int64_t rid;
	assert_int_equal(store_job_trigger(s, "free", &rid, NULL, &err), DBCRON_OK);
	int64_t rid2;
	assert_int_equal(store_job_trigger(s, "free", &rid2, NULL, &err), DBCRON_OK);

	/* Another session holds the job row and one unclaimed run. */
	PGconn *c = raw(&d);
	PQclear(PQexec(c, "BEGIN"));
	PGresult *r = PQexec(c, "SELECT id FROM jobs WHERE name = 'held' FOR UPDATE");
	assert_int_equal(PQntuples(r), 1);
	PQclear(r);
	char sql[128];
	snprintf(sql, sizeof(sql), "SELECT id FROM runs WHERE id = %" PRId64 " FOR UPDATE", rid);
	r = PQexec(c, sql);
	assert_int_equal(PQntuples(r), 1);
	PQclear(r);

	signal(SIGALRM, on_alarm);
	alarm(60);
	planner p;
	store_claim_req req = {.node_id = "n1", .token = "t1", .horizon_ms_ahead = 1000,
			       .max = 100, .plan = plan_every, .plan_ctx = &p};
	store_claim_result res;
	assert_int_equal(store_claim(s, &req, &res, &err), DBCRON_OK);
	alarm(0);
	/* "free" fire + the unlocked trigger; not "held", not the locked run. */
	assert_int_equal(res.nruns, 2);
	assert_int_equal(res.njobs, 1);
	assert_string_equal(res.jobs[0].name, "free");
	for (size_t i = 0; i < res.nruns; i++) {
		assert_true(res.runs[i].run.id != rid);
		assert_ptr_equal(res.runs[i].job, &res.jobs[0]);
	}
	store_claim_result_clear(&res);

	/* Once released, the next claim takes the rest. */
	PQclear(PQexec(c, "COMMIT"));
	store_claim_req req2 = {.node_id = "n1", .token = "t2", .horizon_ms_ahead = 1000,
			       .max = 100, .plan = plan_every, .plan_ctx = &p};
	assert_int_equal(store_claim(s, &req2, &res, &err), DBCRON_OK);
	assert_int_equal(res.nruns, 2);
	store_claim_result_clear(&res);
	PQfinish(c);
	for (int i = 0; i < 2; i++)
		dbcron_job_clear(&jobs[i]);
	store_close(s);
	tdb_drop(&d);
}

/* Fencing, retries, reap and node registry, end to end on one database. */
static void test_fencing_reap_and_nodes(void **state)
{
	(void)state;
	tdb d;
	tdb_create(&d);
	store *s = open_migrated(&d);
	dbcron_err err = {0};
	int64_t now = db_now(s);
	dbcron_job jobs[2];
	every_job(&jobs[0], "r", 3600000, now - 5);
	jobs[0].max_retries = 1;
	every_job(&jobs[1], "after", 5000, now - 5);
	jobs[1].kind = DBCRON_SCHED_AFTER;
	jobs[1].node_loss = DBCRON_NODE_LOSS_ABANDON;
	assert_int_equal(store_job_put(s, jobs, 2, STORE_PUT_CREATE, false, NULL, NULL, NULL, &err),
			 DBCRON_OK);

	store_node_info a = {"A", "inc-1", "host", 11, 4, 60000, NULL, 0};
	store_node_info b = {"B", "inc-1", "host", 12, 4, 60000, NULL, 0};
	assert_int_equal(store_node_register(s, &a, &err), DBCRON_OK);
	assert_int_equal(store_node_register(s, &b, &err), DBCRON_OK);

	planner p;
	store_claim_req req = {.node_id = "A", .token = "tokA", .horizon_ms_ahead = 0,
			       .max = 100, .plan = plan_every, .plan_ctx = &p};
	store_claim_result res;
	assert_int_equal(store_claim(s, &req, &res, &err), DBCRON_OK);
	assert_int_equal(res.nruns, 2);
	store_update ups[2];
	for (int i = 0; i < 2; i++) {
		const dbcron_run *r = &res.runs[i].run;
		ups[i] = (store_update){.run_id = r->id, .job_id = r->job_id, .fire_at = r->fire_at,
					.attempt = 1, .token = "tokA", .state = DBCRON_RUN_RUNNING,
					.started_ms = res.now_ms, .finished_ms = -1,
					.retry_due_at = -1, .job_next_fire_at = -1};
	}
	/* Wrong node or token: refused, per update. */
	assert_int_equal(store_apply(s, "B", ups, 2, &err), DBCRON_OK);
	assert_false(ups[0].applied);
	ups[1].token = "stale";
	assert_int_equal(store_apply(s, "A", ups, 2, &err), DBCRON_OK);
	assert_true(ups[0].applied);
	assert_false(ups[1].applied);
	ups[1].token = "tokA";
	assert_int_equal(store_apply(s, "A", &ups[1], 1, &err), DBCRON_OK);
	assert_true(ups[1].applied);
	bool running = false;
	assert_int_equal(store_job_running(s, ups[0].job_id, -1, &running, &err), DBCRON_OK);
	assert_true(running);
	assert_int_equal(store_job_running(s, ups[0].job_id, ups[0].run_id, &running, &err), DBCRON_OK);
	assert_false(running);

	/* A's lease lapses; B reaps.  "r" gets attempt 2 (node_loss retry),
	 * "after" is abandoned and rescheduled. */
	PGconn *c = raw(&d);
	PQclear(PQexec(c, "UPDATE nodes SET lease_until = 0 WHERE id = 'A'"));
	PQclear(PQexec(c, "UPDATE jobs SET next_fire_at = NULL WHERE name = 'after'"));
	size_t reaped = 0;
	assert_int_equal(store_reap(s, &reaped, &err), DBCRON_OK);
	assert_int_equal(reaped, 2);
	assert_int_equal(store_reap(s, &reaped, &err), DBCRON_OK);
	assert_int_equal(reaped, 0);
	assert_int_equal(q_i64(c, "SELECT count(*) FROM runs WHERE state = 8 AND error = 'node lost'"), 2);
	assert_int_equal(q_i64(c, "SELECT count(*) FROM runs WHERE job_name = 'r' AND attempt = 2"
				  " AND state = 1 AND node IS NULL"), 1);
	assert_int_equal(q_i64(c, "SELECT count(*) FROM runs WHERE job_name = 'after' AND attempt = 2"), 0);
	assert_true(q_i64(c, "SELECT next_fire_at FROM jobs WHERE name = 'after'") >= now);
	/* A's late writes are refused; its heartbeat learns it is dead. */
	ups[0].state = DBCRON_RUN_SUCCEEDED;
	ups[0].finished_ms = now;
	ups[0].retry_due_at = now;
	assert_int_equal(store_apply(s, "A", ups, 1, &err), DBCRON_OK);
	assert_false(ups[0].applied);
	int64_t hb;
	assert_int_equal(store_node_heartbeat(s, "A", "inc-1", 1000, &hb, &err), DBCRON_EFENCED);
	assert_int_equal(store_node_heartbeat(s, "B", "inc-1", 1000, &hb, &err), DBCRON_OK);
	assert_true(hb >= now);
	store_claim_result_clear(&res);

	/* B claims the retry, fails it with a retry that is out of budget
	 * for the policy but the caller asked: a new unclaimed row. */
	store_claim_req rb = {.node_id = "B", .token = "tokB", .horizon_ms_ahead = 0,
			       .max = 100, .plan = plan_every, .plan_ctx = &p};
	assert_int_equal(store_claim(s, &rb, &res, &err), DBCRON_OK);
	assert_int_equal(res.nruns, 1);
	assert_int_equal(res.runs[0].run.attempt, 2);
	store_update f = {.run_id = res.runs[0].run.id, .job_id = res.runs[0].run.job_id,
			  .fire_at = res.runs[0].run.fire_at, .attempt = 2, .token = "tokB",
			  .state = DBCRON_RUN_FAILED, .started_ms = now, .finished_ms = now,
			  .has_exit_code = true, .exit_code = 3, .error = "bad \xff bytes",
			  .output = "out", .retry_due_at = now + 1, .job_next_fire_at = -1};
	assert_int_equal(store_apply(s, "B", &f, 1, &err), DBCRON_OK);
	assert_true(f.applied);
	store_claim_result_clear(&res);
	assert_int_equal(q_i64(c, "SELECT exit_code FROM runs WHERE job_name = 'r' AND attempt = 2"), 3);
	assert_int_equal(q_i64(c, "SELECT count(*) FROM runs WHERE job_name = 'r' AND attempt = 3"
				  " AND state = 1 AND node IS NULL"), 1);

	/* B claims attempt 3, then stops: it is handed back. */
	rb.token = "tokB2";
	rb.horizon_ms_ahead = 1000;
	assert_int_equal(store_claim(s, &rb, &res, &err), DBCRON_OK);
	assert_int_equal(res.nruns, 1);
	store_claim_result_clear(&res);
	assert_int_equal(store_node_stop(s, "B", "inc-1", &err), DBCRON_OK);
	assert_int_equal(q_i64(c, "SELECT count(*) FROM runs WHERE state = 1 AND node IS NOT NULL"), 0);

	/* A comes back as a new incarnation: registered alive again. */
	store_node_info a2 = {"A", "inc-2", "host", 13, 4, 60000, NULL, 0};
	assert_int_equal(store_node_register(s, &a2, &err), DBCRON_OK);
	assert_int_equal(store_node_heartbeat(s, "A", "inc-1", 1000, &hb, &err), DBCRON_EFENCED);
	assert_int_equal(store_node_heartbeat(s, "A", "inc-2", 1000, &hb, &err), DBCRON_OK);
	PQfinish(c);
	for (int i = 0; i < 2; i++)
		dbcron_job_clear(&jobs[i]);
	store_close(s);
	tdb_drop(&d);
}

static int count_lock(void *ctx, const store_lock_row *l)
{
	(void)l;
	(*(int *)ctx)++;
	return 0;
}

static void test_lease_locks(void **state)
{
	(void)state;
	tdb d;
	tdb_create(&d);
	store *s = open_migrated(&d);
	dbcron_err err = {0};
	int64_t f1, f2, until;
	store_lock_row h = {0};
	assert_int_equal(store_lock_acquire(s, "m", "o1", 60000, &f1, &until, &h, &err), DBCRON_OK);
	assert_int_equal(f1, 1);
	assert_int_equal(store_lock_acquire(s, "m", "o2", 60000, &f2, &until, &h, &err), DBCRON_ELOCKED);
	assert_string_equal(h.owner, "o1");
	assert_int_equal(h.fence, 1);
	store_lock_row_clear(&h);
	assert_int_equal(store_lock_renew(s, "m", "o1", f1, 60000, &until, &err), DBCRON_OK);
	assert_int_equal(store_lock_release(s, "m", "o1", f1, &err), DBCRON_OK);
	assert_int_equal(store_lock_acquire(s, "m", "o2", 60000, &f2, &until, &h, &err), DBCRON_OK);
	assert_int_equal(f2, 2);
	/* The old holder can neither renew nor release the new lease. */
	assert_int_equal(store_lock_renew(s, "m", "o1", f1, 60000, &until, &err), DBCRON_EFENCED);
	assert_int_equal(store_lock_release(s, "m", "o1", f1, &err), DBCRON_EFENCED);
	int n = 0;
	assert_int_equal(store_lock_list(s, count_lock, &n, &err), DBCRON_OK);
	assert_int_equal(n, 1);
	/* Two lock attempts logged in the same millisecond both land. */
	dbcron_run run = {.job_id = 0, .job_name = "lock:m", .fire_at = 1000, .attempt = 1,
			  .state = DBCRON_RUN_SKIPPED, .due_at = 1000, .started_ms = -1,
			  .finished_ms = 1000, .error = "held"};
	assert_int_equal(store_log_run(s, &run, &err), DBCRON_OK);
	run.job_name = "lock:other";
	assert_int_equal(store_log_run(s, &run, &err), DBCRON_OK);
	PGconn *c = raw(&d);
	assert_int_equal(q_i64(c, "SELECT count(*) FROM runs WHERE job_id = 0"), 2);
	int64_t del = 0;
	assert_int_equal(store_prune_runs(s, 2000, &del, &err), DBCRON_OK);
	assert_int_equal(del, 2);
	PQfinish(c);
	store_close(s);
	tdb_drop(&d);
}

typedef struct collect {
	int n;
	char names[16][16];
	int64_t fire[16];
} collect;

static int collect_run(void *ctx, const dbcron_run *r)
{
	collect *c = ctx;
	if (c->n < 16) {
		snprintf(c->names[c->n], 16, "%s", r->job_name);
		c->fire[c->n] = r->fire_at;
	}
	c->n++;
	return 0;
}

static void test_runs_list_order(void **state)
{
	(void)state;
	tdb d;
	tdb_create(&d);
	store *s = open_migrated(&d);
	dbcron_err err = {0};
	PGconn *c = raw(&d);
	PQclear(PQexec(c, "INSERT INTO runs (job_id, job_name, fire_at, attempt, state, due_at, created_ms)"
			  " VALUES (1, 'b', 10, 1, 3, 10, 0), (2, 'a', 10, 1, 3, 10, 0),"
			  " (1, 'b', 5, 1, 4, 5, 0), (1, 'b', 20, 1, 3, 20, 0)"));
	collect col = {0};
	store_run_filter f = {.job = NULL, .state = 0, .since_ms = -1, .limit = 0};
	assert_int_equal(store_runs_list(s, &f, collect_run, &col, &err), DBCRON_OK);
	assert_int_equal(col.n, 4);
	assert_int_equal(col.fire[0], 5);
	assert_string_equal(col.names[1], "a");
	assert_string_equal(col.names[2], "b");
	assert_int_equal(col.fire[3], 20);
	memset(&col, 0, sizeof(col));
	f.limit = 2; /* the two most recent, ascending */
	assert_int_equal(store_runs_list(s, &f, collect_run, &col, &err), DBCRON_OK);
	assert_int_equal(col.n, 2);
	assert_int_equal(col.fire[0], 10);
	assert_string_equal(col.names[0], "b");
	assert_int_equal(col.fire[1], 20);
	memset(&col, 0, sizeof(col));
	store_run_filter g = {.job = "b", .state = DBCRON_RUN_SUCCEEDED, .since_ms = 6, .limit = 0};
	assert_int_equal(store_runs_list(s, &g, collect_run, &col, &err), DBCRON_OK);
	assert_int_equal(col.n, 2);
	PQfinish(c);
	store_close(s);
	tdb_drop(&d);
}

static void test_reconnect_after_restart(void **state)
{
	(void)state;
	const char *dir = getenv("DBCRON_TEST_PGDIR");
	if (!dir || !*dir) {
		print_message("SKIP reconnect: set DBCRON_TEST_PGDIR to the pg-tmp.sh directory of the server\n");
		skip();
	}
	tdb d;
	tdb_create(&d);
	store *s = open_migrated(&d);
	dbcron_err err = {0};
	dbcron_job j;
	int64_t now = db_now(s);
	/* hourly: one fire due however long the restart takes (every second,
	 * a slow restart made two or more due) */
	every_job(&j, "x", 3600000, now - 5);
	assert_int_equal(store_job_put(s, &j, 1, STORE_PUT_CREATE, false, NULL, NULL, NULL, &err),
			 DBCRON_OK);

	/* DBCRON_TEST_DATA is <src>/tests/data: the script is <src>/scripts. */
	char src[1024], cmd[2300];
	snprintf(src, sizeof(src), "%s", DBCRON_TEST_DATA);
	char *cut = strstr(src, "/tests/data");
	assert_non_null(cut);
	*cut = '\0';
	snprintf(cmd, sizeof(cmd), "bash '%s/scripts/pg-tmp.sh' restart '%s'", src, dir);
	assert_int_equal(system(cmd), 0);

	/* The first call may report the loss (DBCRON_ECONN, never another
	 * code); by the second the handle has reconnected and re-prepared. */
	planner p;
	store_claim_req req = {.node_id = "n", .token = "t", .horizon_ms_ahead = 0,
			       .max = 10, .plan = plan_every, .plan_ctx = &p};
	store_claim_result res;
	int rc = store_claim(s, &req, &res, &err);
	if (rc) {
		assert_int_equal(rc, DBCRON_ECONN);
		print_message("first call after restart: %s\n", err.msg);
		rc = store_claim(s, &req, &res, &err);
	}
	if (rc)
		fail_msg("claim after reconnect: %s", err.msg);
	assert_int_equal(res.nruns, 1);
	store_claim_result_clear(&res);
	store_close(s);
	dbcron_job_clear(&j);
	tdb_drop(&d);
}

static void test_statement_counts(void **state)
{
	(void)state;
	tdb d;
	tdb_create(&d);
	store *s = open_migrated(&d);
	dbcron_err err = {0};
	enum { N = 300 };
	int64_t now = db_now(s);
	dbcron_job *jobs = dbcron__calloc(N, sizeof(*jobs));
	for (int i = 0; i < N; i++) {
		char name[16];
		snprintf(name, sizeof(name), "s%03d", i);
		every_job(&jobs[i], name, 3600000, now - 5);
	}
	assert_int_equal(store_job_put(s, jobs, N, STORE_PUT_CREATE, false, NULL, NULL, NULL, &err),
			 DBCRON_OK);
	planner p;
	store_claim_req req = {.node_id = "n", .token = "t", .horizon_ms_ahead = 0,
			       .max = N, .plan = plan_every, .plan_ctx = &p};
	store_claim_result res;
	uint64_t before = s->stmt_count;
	assert_int_equal(store_claim(s, &req, &res, &err), DBCRON_OK);
	uint64_t claim_stmts = s->stmt_count - before;
	assert_int_equal(res.nruns, N);
	store_update *ups = dbcron__calloc(N, sizeof(*ups));
	for (int i = 0; i < N; i++) {
		const dbcron_run *r = &res.runs[i].run;
		ups[i] = (store_update){.run_id = r->id, .job_id = r->job_id, .fire_at = r->fire_at,
					.attempt = 1, .token = "t", .state = DBCRON_RUN_SUCCEEDED,
					.started_ms = now, .finished_ms = now, .retry_due_at = -1,
					.job_next_fire_at = -1};
	}
	before = s->stmt_count;
	assert_int_equal(store_apply(s, "n", ups, N, &err), DBCRON_OK);
	uint64_t apply_stmts = s->stmt_count - before;
	for (int i = 0; i < N; i++)
		assert_true(ups[i].applied);
	print_message("claim of %d fires: %" PRIu64 " statements; apply of %d: %" PRIu64 "\n",
		      N, claim_stmts, N, apply_stmts);
	assert_true(claim_stmts <= 8);
	assert_true(apply_stmts <= 4);
	store_claim_result_clear(&res);
	for (int i = 0; i < N; i++)
		dbcron_job_clear(&jobs[i]);
	dbcron__free(jobs);
	dbcron__free(ups);
	store_close(s);
	tdb_drop(&d);
}

/* The plan of statement id on d's database with sequential scans off (a
 * small table would be scanned whatever the indexes), one step a line. */
static void pg_plan(tdb *d, int id, const char *const *v, int nv, char *plan, size_t len)
{
	PGconn *c = raw(d);
	char sql[4096];
	size_t n = 0;
	PQclear(PQexec(c, "SET enable_seqscan = off"));
	snprintf(sql, sizeof(sql), "EXPLAIN %s", store_pg_dialect.sql[id]);
	PGresult *r = PQexecParams(c, sql, nv, NULL, v, NULL, NULL, 0);
	if (PQresultStatus(r) != PGRES_TUPLES_OK)
		fail_msg("explain: %s", PQerrorMessage(c));
	plan[0] = '\0';
	for (int i = 0; i < PQntuples(r) && n < len - 1; i++)
		n += (size_t)snprintf(plan + n, len - n, "%s\n", PQgetvalue(r, i, 0));
	PQclear(r);
	PQfinish(c);
	print_message("%s", plan);
}

/* Issue 23 item 10: one job's runs (runs --job X, a job's last runs) can be
 * read through runs_job_name_fire (seq scans off, so that an empty table's
 * plan still shows which index serves the statement). */
static void test_runs_of_one_job_plan(void **state)
{
	(void)state;
	tdb d;
	tdb_create(&d);
	store *s = open_migrated(&d);
	const char *v[8] = {"x", "0", "-1", "10", "-1", "", "0", "0"};
	char plan[4096];
	pg_plan(&d, ST_RUNS_LIST_JOB, v, 8, plan, sizeof(plan));
	assert_non_null(strstr(plan, "runs_job_name_fire"));
	store_close(s);
	tdb_drop(&d);
}

/* Issue 30 item 2: the overdue check, which every node runs every 5 s,
 * can read the jobs with a silence limit through jobs_overdue instead of
 * scanning every job (seq scans off, as above). */
static void test_overdue_find_plan(void **state)
{
	(void)state;
	tdb d;
	tdb_create(&d);
	store *s = open_migrated(&d);
	const char *v[1] = {"1000"};
	char plan[4096];
	pg_plan(&d, ST_OVERDUE_FIND, v, 1, plan, sizeof(plan));
	assert_non_null(strstr(plan, "on jobs_overdue"));
	store_close(s);
	tdb_drop(&d);
}

/* Issue 30 item 1: an outcome batch (RUNS_APPLY) reads the node's live
 * runs only, not every run the node ever wrote.  Its fence once read
 * "state BETWEEN 1 AND v.live", which PostgreSQL served from
 * runs_node_state as "state >= 1": each batch hashed the node's whole
 * history and W2 fell to 0.6x.  With 20,000 finished runs of the node and
 * 20 live ones, the update (run and rolled back) must scan about the 20. */
static void test_outcome_batch_reads_live_runs(void **state)
{
	(void)state;
	tdb d;
	tdb_create(&d);
	store *s = open_migrated(&d);
	PGconn *c = raw(&d);
	PGresult *r = PQexec(c,
		"INSERT INTO runs (job_id, job_name, fire_at, attempt, state, due_at, node, "
		"claim_token, created_ms) SELECT x, 'j' || x, 1000, 1, CASE WHEN x <= 20 THEN 2 "
		"ELSE 3 END, 1000, 'n', 't', 1000 FROM generate_series(1, 20020) x");
	if (PQresultStatus(r) != PGRES_COMMAND_OK)
		fail_msg("insert: %s", PQerrorMessage(c));
	PQclear(r);
	PQclear(PQexec(c, "BEGIN"));
	char sql[8192];
	snprintf(sql, sizeof(sql), "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) %s",
		 store_pg_dialect.sql[ST_RUNS_APPLY]);
	char ids[256] = "{", toks[128] = "{", sts[128] = "{", nul[128] = "{", f[128] = "{",
	     live[128] = "{";
	for (int i = 1; i <= 20; i++) {
		const char *sep = i < 20 ? "," : "}";
		snprintf(ids + strlen(ids), sizeof(ids) - strlen(ids), "%d%s", i, sep);
		snprintf(toks + strlen(toks), sizeof(toks) - strlen(toks), "t%s", sep);
		snprintf(sts + strlen(sts), sizeof(sts) - strlen(sts), "3%s", sep);
		snprintf(nul + strlen(nul), sizeof(nul) - strlen(nul), "NULL%s", sep);
		snprintf(f + strlen(f), sizeof(f) - strlen(f), "f%s", sep);
		snprintf(live + strlen(live), sizeof(live) - strlen(live), "2%s", sep);
	}
	/* (node) [id, token, state, started, finished, hx, exit, error,
	 * output, live] */
	const char *v[11] = {"n", ids, toks, sts, nul, nul, f, nul, nul, nul, live};
	r = PQexecParams(c, sql, 11, NULL, v, NULL, NULL, 0);
	if (PQresultStatus(r) != PGRES_TUPLES_OK)
		fail_msg("explain: %s", PQerrorMessage(c));
	/* the rows the scan of runs (index, bitmap or seq) handed up */
	long scanned = -1;
	char plan[8192] = "";
	size_t n = 0;
	for (int i = 0; i < PQntuples(r); i++) {
		const char *line = PQgetvalue(r, i, 0), *rows = strstr(line, " rows=");
		if (n < sizeof(plan) - 1)
			n += (size_t)snprintf(plan + n, sizeof(plan) - n, "%s\n", line);
		if (strstr(line, " on runs (") && strstr(line, "Scan") && rows)
			scanned = atol(rows + 6);
	}
	PQclear(r);
	PQclear(PQexec(c, "ROLLBACK"));
	PQfinish(c);
	print_message("%s", plan);
	if (scanned < 0 || scanned > 100)
		fail_msg("an outcome batch of 20 runs scanned %ld of the node's runs", scanned);
	store_close(s);
	tdb_drop(&d);
}

int main(void)
{
	admin_conninfo = getenv("DBCRON_TEST_PG");
	if (!admin_conninfo || !*admin_conninfo) {
		fprintf(stderr, "test_store_pg: DBCRON_TEST_PG is not set; it must be the libpq "
				"conninfo of a PostgreSQL server (start one with "
				"`bash scripts/pg-tmp.sh start DIR`)\n");
		return 1;
	}
	store_conf_fresh_url = pg_fresh_url;
	store_conf_release_url = pg_release_url;
	const struct CMUnitTest tests[] = {
		STORE_CONFORMANCE_TESTS,
		STORE_CONFORMANCE_FAULT_TESTS,
		STORE_CONFORMANCE_NEEDS_TESTS,
		STORE_CONFORMANCE_AUDIT_TESTS,
		STORE_CONFORMANCE_EDIT_TESTS,
		cmocka_unit_test(test_mask_url),
		cmocka_unit_test(test_password_never_in_errors),
		cmocka_unit_test(test_schema_check_and_concurrent_init),
		cmocka_unit_test(test_job_put_and_views),
		cmocka_unit_test(test_skip_locked_does_not_block),
		cmocka_unit_test(test_fencing_reap_and_nodes),
		cmocka_unit_test(test_lease_locks),
		cmocka_unit_test(test_runs_list_order),
		cmocka_unit_test(test_statement_counts),
		cmocka_unit_test(test_reconnect_after_restart),
		cmocka_unit_test(test_runs_of_one_job_plan),
		cmocka_unit_test(test_overdue_find_plan),
		cmocka_unit_test(test_outcome_batch_reads_live_runs),
	};
	int failed = cmocka_run_group_tests_name("store_pg", tests, NULL, NULL);
	/* A failed test jumps past its own DROP: sweep what this process made. */
	PGconn *c = PQconnectdb(admin_conninfo);
	if (PQstatus(c) == CONNECTION_OK) {
		PQsetNoticeProcessor(c, no_notices, NULL);
		for (int i = 1; i <= db_seq; i++) {
			char sql[128];
			snprintf(sql, sizeof(sql), "DROP DATABASE IF EXISTS dbcron_t_%d_%d WITH (FORCE)",
				 (int)getpid(), i);
			PQclear(PQexec(c, sql));
		}
	}
	PQfinish(c);
	return failed;
}
