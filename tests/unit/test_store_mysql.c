/*
 * The MySQL / MariaDB backend against a real server (env DBCRON_TEST_MYSQL,
 * a dbcron URL of a server where we may CREATE DATABASE, as
 * scripts/mariadb-tmp.sh prints).  Every test gets a fresh database
 * dbcron_t_<pid>_<n>, dropped at the end; the whole conformance suite runs
 * as on SQLite and PostgreSQL.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <mysql.h>

#include "store_conformance.h"
#include "store_conformance_faults.h"
#include "store_conformance_edits.h"
#include "store_conformance_needs.h"
#include "store_conformance_audit.h"

#include "core/alloc.h"
#include "store/dialect.h"
#include "store/store.h"
#include "store/store_int.h"

static const char *admin_url;
static int db_seq;

/* admin_url with its database replaced by name */
static void url_for(const char *name_in, char *buf, size_t len)
{
	char name[64];
	snprintf(name, sizeof(name), "%s", name_in); /* name_in may live beside buf */
	const char *p = strstr(admin_url, "://");
	assert_non_null(p);
	const char *slash = strchr(p + 3, '/');
	assert_non_null(slash);
	const char *qm = strchr(slash, '?');
	snprintf(buf, len, "%.*s/%s%s", (int)(slash - admin_url), admin_url, name, qm ? qm : "");
}

static MYSQL *admin_connect(void)
{
	/* DDL and checks through the raw driver: the store runs only its own
	 * statements */
	MYSQL *db = mysql_init(NULL);
	assert_non_null(db);
	char host[256] = "", user[64] = "root", sock[512] = "";
	unsigned port = 0;
	const char *a = strstr(admin_url, "://") + 3;
	const char *at = strchr(a, '@');
	if (at) {
		snprintf(user, sizeof(user), "%.*s", (int)(at - a), a);
		a = at + 1;
	}
	const char *slash = strchr(a, '/');
	const char *colon = memchr(a, ':', (size_t)(slash - a));
	snprintf(host, sizeof(host), "%.*s", (int)((colon ? colon : slash) - a), a);
	if (colon)
		port = (unsigned)atoi(colon + 1);
	const char *so = strstr(admin_url, "socket=");
	if (so)
		snprintf(sock, sizeof(sock), "%.*s", (int)strcspn(so + 7, "&"), so + 7);
	if (!mysql_real_connect(db, host, user, getenv("MYSQL_PWD"), NULL, port, sock[0] ? sock : NULL, 0))
		fail_msg("admin connect: %s", mysql_error(db));
	return db;
}

static void admin_exec(const char *text)
{
	MYSQL *db = admin_connect();
	if (mysql_query(db, text))
		fail_msg("%s: %s", text, mysql_error(db));
	mysql_close(db);
}

/* Prepared statements the server has executed, all sessions. */
static long server_executes(MYSQL *db)
{
	if (mysql_query(db, "SHOW GLOBAL STATUS LIKE 'Com_stmt_execute'"))
		fail_msg("status: %s", mysql_error(db));
	MYSQL_RES *r = mysql_store_result(db);
	MYSQL_ROW row = r ? mysql_fetch_row(r) : NULL;
	long v = row && row[1] ? atol(row[1]) : -1;
	if (r)
		mysql_free_result(r);
	return v;
}

typedef struct tdb {
	char name[64];
	char url[1024];
} tdb;

static tdb conf_dbs[256];
static int conf_ndbs;

static const char *my_fresh_url(void)
{
	assert_true(conf_ndbs < (int)(sizeof(conf_dbs) / sizeof(conf_dbs[0])));
	tdb *d = &conf_dbs[conf_ndbs++];
	char text[128];
	snprintf(d->name, sizeof(d->name), "dbcron_t_%d_%d", (int)getpid(), ++db_seq);
	snprintf(text, sizeof(text), "CREATE DATABASE %.63s", d->name);
	admin_exec(text);
	url_for(d->name, d->url, sizeof(d->url));
	return d->url;
}

static void my_release_url(const char *url)
{
	for (int i = 0; i < conf_ndbs; i++)
		if (conf_dbs[i].name[0] && strcmp(conf_dbs[i].url, url) == 0) {
			char text[128];
			snprintf(text, sizeof(text), "DROP DATABASE IF EXISTS %.63s", conf_dbs[i].name);
			admin_exec(text);
			conf_dbs[i].name[0] = '\0';
		}
}

/* The password never reaches a message, whichever way the URL puts it. */
static void test_mask_and_bad_urls(void **state)
{
	(void)state;
	store *s = NULL;
	dbcron_err err = {0};
	assert_int_not_equal(store_open("mysql://u:s3cret@127.0.0.1:1/db", &s, &err), DBCRON_OK);
	assert_null(strstr(err.msg, "s3cret"));
	assert_int_equal(store_open("mysql://u@127.0.0.1:99999/db", &s, &err), DBCRON_EINVAL);
	assert_non_null(strstr(err.msg, "port"));
	assert_int_equal(store_open("mysql://u@127.0.0.1/", &s, &err), DBCRON_EINVAL);
	assert_non_null(strstr(err.msg, "no database"));
	assert_int_equal(store_open("mysql://u@127.0.0.1/db?sslmode=x", &s, &err), DBCRON_EINVAL);
	assert_non_null(strstr(err.msg, "unknown parameter"));
	assert_int_equal(store_open("mysql://u@127.0.0.1/db?insert_returning=2", &s, &err), DBCRON_EINVAL);
	assert_non_null(strstr(err.msg, "insert_returning=0|1"));
}

/* The planner of this test: one fire at next_fire_at, then an hour on. */
static int plan_once(void *ctx, const dbcron_job *job, int64_t now_ms, int64_t horizon_ms,
		     store_plan *out)
{
	store_fire *f = ctx;
	(void)now_ms;
	(void)horizon_ms;
	memset(f, 0, sizeof(*f));
	f->fire_at = f->due_at = job->next_fire_at;
	f->state = DBCRON_RUN_SCHEDULED;
	out->fires = f;
	out->nfires = 1;
	out->next_fire_at = job->next_fire_at + 3600000;
	return DBCRON_OK;
}

/* Server round trips per claim and per batch of outcomes do not grow with
 * the batch (seed 000's batch claim): JSON_TABLE carries the rows. */
static void claim_and_apply_trips(int n, const char *param, long *claim, long *apply)
{
	const char *url = my_fresh_url();
	char opened[1100];
	snprintf(opened, sizeof(opened), "%s%s%s", url, !param ? "" : strchr(url, '?') ? "&" : "?",
		 param ? param : "");
	store *s = NULL;
	dbcron_err err = {0};
	if (store_open(opened, &s, &err) || store_migrate(s, NULL, NULL, &err))
		fail_msg("open: %s", err.msg);
	int64_t now = 0;
	assert_int_equal(store_now_ms(s, &now, &err), DBCRON_OK);
	dbcron_job *jobs = dbcron__calloc((size_t)n, sizeof(*jobs));
	for (int i = 0; i < n; i++) {
		char name[16];
		snprintf(name, sizeof(name), "s%04d", i);
		conf_job(&jobs[i], name, now - 5);
	}
	assert_int_equal(store_job_put(s, jobs, (size_t)n, STORE_PUT_CREATE, false, NULL, NULL,
				       NULL, &err),
			 DBCRON_OK);
	store_fire f;
	store_claim_req req = {.node_id = "n", .token = "t", .horizon_ms_ahead = 0, .max = n,
			       .plan = plan_once, .plan_ctx = &f};
	store_claim_result res;
	MYSQL *db = admin_connect();
	long before = server_executes(db);
	assert_int_equal(store_claim(s, &req, &res, &err), DBCRON_OK);
	*claim = server_executes(db) - before;
	assert_int_equal(res.nruns, n);
	store_update *ups = dbcron__calloc((size_t)n, sizeof(*ups));
	for (int i = 0; i < n; i++) {
		const dbcron_run *r = &res.runs[i].run;
		ups[i] = (store_update){.run_id = r->id, .job_id = r->job_id, .fire_at = r->fire_at,
					.attempt = 1, .token = "t", .state = DBCRON_RUN_SUCCEEDED,
					.started_ms = now, .finished_ms = now, .retry_due_at = -1,
					.job_next_fire_at = -1};
	}
	before = server_executes(db);
	assert_int_equal(store_apply(s, "n", ups, (size_t)n, &err), DBCRON_OK);
	*apply = server_executes(db) - before;
	for (int i = 0; i < n; i++)
		assert_true(ups[i].applied);
	mysql_close(db);
	store_claim_result_clear(&res);
	for (int i = 0; i < n; i++)
		dbcron_job_clear(&jobs[i]);
	dbcron__free(jobs);
	dbcron__free(ups);
	store_close(s);
	my_release_url(url);
}

static void test_round_trips_constant(void **state)
{
	(void)state;
	long c10, a10, c500, a500;
	claim_and_apply_trips(10, NULL, &c10, &a10);
	claim_and_apply_trips(500, NULL, &c500, &a500);
	print_message("server statements: claim of 10 fires %ld, of 500 %ld; apply of 10 %ld, of 500 %ld\n",
		      c10, c500, a10, a500);
	assert_true(c10 > 0 && a10 > 0);
	assert_int_equal(c500, c10);
	assert_int_equal(a500, a10);
}

/* The form for servers without INSERT ... RETURNING (MySQL), here forced
 * on MariaDB: the claim's batch insert reads back by a private token in
 * two more statements, still as many for 500 fires as for 10.  (The whole
 * conformance suite runs in this form as test_store_mysql_noreturning.) */
static void test_no_returning_form(void **state)
{
	(void)state;
	long c10, a10, c500, a500, d10, b10;
	claim_and_apply_trips(10, "insert_returning=1", &d10, &b10);
	claim_and_apply_trips(10, "insert_returning=0", &c10, &a10);
	claim_and_apply_trips(500, "insert_returning=0", &c500, &a500);
	print_message("without RETURNING: claim of 10 fires %ld statements (%ld with), of 500 %ld\n",
		      c10, d10, c500);
	assert_int_equal(c10, d10 + 2);
	assert_int_equal(c500, c10);
	assert_int_equal(a500, a10);
	assert_int_equal(a10, b10);
}


/* A put of n new jobs, each with a command argument of arg_bytes: the
 * server statements it took, and every job read back whole. */
static long put_trips(int n, size_t arg_bytes)
{
	const char *url = my_fresh_url();
	store *s = NULL;
	dbcron_err err = {0};
	if (store_open(url, &s, &err) || store_migrate(s, NULL, NULL, &err))
		fail_msg("open: %s", err.msg);
	dbcron_job *jobs = dbcron__calloc((size_t)n, sizeof(*jobs));
	char *arg = dbcron__calloc(1, arg_bytes + 1);
	assert_non_null(jobs);
	assert_non_null(arg);
	memset(arg, 'x', arg_bytes);
	for (int i = 0; i < n; i++) {
		char name[16];
		snprintf(name, sizeof(name), "p%04d", i);
		conf_job(&jobs[i], name, 1000);
		jobs[i].executor = DBCRON_EXEC_SHELL;
		dbcron__free(jobs[i].handler);
		jobs[i].handler = NULL;
		jobs[i].argc = 2;
		jobs[i].argv = dbcron__calloc(3, sizeof(char *));
		jobs[i].argv[0] = dbcron__strdup("/bin/echo");
		jobs[i].argv[1] = dbcron__strdup(arg);
	}
	MYSQL *db = admin_connect();
	long before = server_executes(db);
	if (store_job_put(s, jobs, (size_t)n, STORE_PUT_CREATE, false, NULL, NULL, NULL, &err))
		fail_msg("put of %d jobs of %zu bytes: %s", n, arg_bytes, err.msg);
	long trips = server_executes(db) - before;
	mysql_close(db);
	for (int i = 0; i < n; i++) {
		dbcron_job got;
		assert_int_equal(store_job_get(s, jobs[i].name, &got, &err), DBCRON_OK);
		assert_int_equal(got.id, jobs[i].id);
		assert_int_equal(got.argc, 2);
		assert_int_equal(strlen(got.argv[1]), arg_bytes);
		dbcron_job_clear(&got);
		dbcron_job_clear(&jobs[i]);
	}
	dbcron__free(jobs);
	dbcron__free(arg);
	store_close(s);
	my_release_url(url);
	return trips;
}

/* A put's new jobs and their audit rows go in one statement each whatever
 * their number (a million-job apply was two million statements), and in
 * slices under the server's 16 MiB packet when their commands are long:
 * 24 jobs of 1 MiB each land whole, where one statement of them all would
 * be refused. */
static void test_put_insert_slices(void **state)
{
	(void)state;
	long p10 = put_trips(10, 10), p500 = put_trips(500, 10);
	long big = put_trips(24, (size_t)1 << 20);
	print_message("server statements: put of 10 jobs %ld, of 500 %ld, of 24 x 1 MiB %ld\n",
		      p10, p500, big);
	/* without RETURNING they go row by row (mysql.c) */
	if (getenv("DBCRON_TEST_MYSQL_NO_RETURNING"))
		assert_true(p500 > p10);
	else
		assert_int_equal(p500, p10);
	assert_true(big > p10);
}

/* One number from the admin connection, in database db. */
static int64_t q_i64(MYSQL *c, const char *db, const char *text)
{
	if (db && mysql_select_db(c, db))
		fail_msg("use %s: %s", db, mysql_error(c));
	if (mysql_query(c, text))
		fail_msg("%s: %s", text, mysql_error(c));
	MYSQL_RES *r = mysql_store_result(c);
	MYSQL_ROW row = r ? mysql_fetch_row(r) : NULL;
	int64_t v = row && row[0] ? strtoll(row[0], NULL, 10) : -1;
	if (r)
		mysql_free_result(r);
	return v;
}

/* the database of a URL, without its parameters (one at a time) */
static const char *db_of(const char *url)
{
	static char name[128];
	const char *d = strrchr(url, '/') + 1;
	snprintf(name, sizeof(name), "%.*s", (int)strcspn(d, "?"), d);
	return name;
}

typedef struct planner {
	store_fire fires[64];
} planner;

/* Every interval from next_fire_at up to the horizon, each a fire. */
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

static void every_job(dbcron_job *j, const char *name, int64_t interval_ms, int64_t first)
{
	conf_job(j, name, first);
	j->interval_ms = interval_ms;
	j->anchor_ms = first;
}

/* Four `dbcron init` at once: each migration applied once. */
static void test_concurrent_init(void **state)
{
	(void)state;
	const char *url = my_fresh_url();
	store *s = NULL;
	dbcron_err err = {0};
	assert_int_equal(store_open(url, &s, &err), DBCRON_OK);
	assert_int_equal(store_check_schema(s, &err), DBCRON_ESCHEMA);
	pid_t kids[4];
	for (int i = 0; i < 4; i++) {
		kids[i] = fork();
		assert_true(kids[i] >= 0);
		if (kids[i] == 0) {
			store *k = NULL;
			dbcron_err e = {0};
			int from = -1, to = -1;
			if (store_open(url, &k, &e) || store_migrate(k, &from, &to, &e)) {
				fprintf(stderr, "child migrate: %s\n", e.msg);
				_exit(1);
			}
			store_close(k);
			_exit(to == store_mysql_dialect.schema_version ? 0 : 2);
		}
	}
	for (int i = 0; i < 4; i++) {
		int st;
		assert_int_equal(waitpid(kids[i], &st, 0), kids[i]);
		assert_true(WIFEXITED(st));
		assert_int_equal(WEXITSTATUS(st), 0);
	}
	assert_int_equal(store_check_schema(s, &err), DBCRON_OK);
	MYSQL *c = admin_connect();
	assert_int_equal(q_i64(c, db_of(url), "SELECT count(*) FROM schema_version"),
			 store_mysql_dialect.schema_version);
	assert_int_equal(q_i64(c, NULL, "SELECT count(*) FROM meta"), 1);
	if (mysql_query(c, "INSERT INTO schema_version VALUES (999, 0)"))
		fail_msg("insert: %s", mysql_error(c));
	assert_int_equal(store_check_schema(s, &err), DBCRON_ESCHEMA);
	assert_int_equal(store_migrate(s, NULL, NULL, &err), DBCRON_ESCHEMA);
	mysql_close(c);
	store_close(s);
	my_release_url(url);
}

/* After a server restart the handle reports the loss once (DBCRON_ECONN,
 * never another code), then reconnects and prepares again. */
static void test_reconnect_after_restart(void **state)
{
	(void)state;
	const char *dir = getenv("DBCRON_TEST_MYSQLDIR");
	if (!dir || !*dir) {
		print_message("SKIP reconnect: set DBCRON_TEST_MYSQLDIR to the mariadb-tmp.sh directory\n");
		skip();
	}
	const char *url = my_fresh_url();
	store *s = NULL;
	dbcron_err err = {0};
	if (store_open(url, &s, &err) || store_migrate(s, NULL, NULL, &err))
		fail_msg("open: %s", err.msg);
	int64_t now = 0;
	assert_int_equal(store_now_ms(s, &now, &err), DBCRON_OK);
	dbcron_job j;
	every_job(&j, "x", 1000, now - 5);
	assert_int_equal(store_job_put(s, &j, 1, STORE_PUT_CREATE, false, NULL, NULL, NULL, &err),
			 DBCRON_OK);
	char src[1024], cmd[2300];
	snprintf(src, sizeof(src), "%s", DBCRON_TEST_DATA);
	char *cut = strstr(src, "/tests/data");
	assert_non_null(cut);
	*cut = '\0';
	snprintf(cmd, sizeof(cmd), "bash '%s/scripts/mariadb-tmp.sh' restart '%s'", src, dir);
	assert_int_equal(system(cmd), 0);
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
	assert_true(res.nruns >= 1); /* one a second since before the restart */
	store_claim_result_clear(&res);
	store_close(s);
	dbcron_job_clear(&j);
	my_release_url(url);
}

/* A literal written in for a placeholder of a dialect statement. */
typedef struct lit_param {
	const char *mark, *value;
} lit_param;

/* The key MariaDB's EXPLAIN of statement id (its placeholders replaced by
 * the nlit literals of lit) names for table (an alias, as the EXPLAIN
 * shows it), copied into key ("" for none). */
static void explain_key(const conf_ctx *c, int id, const lit_param *lit, size_t nlit,
			const char *table, char *key, size_t keysz)
{
	char text[4096] = "EXPLAIN ";
	const char *q = store_mysql_dialect.sql[id];
	size_t n = strlen(text);
	while (*q && n + 24 < sizeof(text)) {
		size_t k = 0;
		while (k < nlit && strncmp(q, lit[k].mark, strlen(lit[k].mark)))
			k++;
		if (k < nlit) {
			n += (size_t)snprintf(text + n, sizeof(text) - n, "%s", lit[k].value);
			q += strlen(lit[k].mark);
		} else {
			text[n++] = *q++;
			text[n] = '\0';
		}
	}
	MYSQL *db = admin_connect();
	if (mysql_select_db(db, db_of(c->url)) || mysql_query(db, text))
		fail_msg("%s: %s", text, mysql_error(db));
	MYSQL_RES *r = mysql_store_result(db);
	assert_non_null(r);
	MYSQL_ROW row;
	snprintf(key, keysz, "%s", "");
	while ((row = mysql_fetch_row(r)))
		if (row[2] && strcmp(row[2], table) == 0) {
			print_message("%s: type %s key %s\n", table, row[3] ? row[3] : "-",
				      row[5] ? row[5] : "-");
			snprintf(key, keysz, "%s", row[5] ? row[5] : "");
		}
	mysql_free_result(r);
	mysql_close(db);
}

/* Issue 23 item 10: one job's runs (runs --job X, a job's last runs) are
 * read through runs_job_name_fire: EXPLAIN of the dialect's own statement,
 * its parameters written in as literals. */
static void test_runs_of_one_job_plan(void **state)
{
	conf_ctx *c = *state;
	for (int i = 0; i < 3; i++) {
		dbcron_run run;
		memset(&run, 0, sizeof(run));
		run.job_name = i ? "other" : "x";
		run.job_id = i + 1;
		run.fire_at = 1000 + i;
		run.attempt = 1;
		run.state = DBCRON_RUN_SUCCEEDED;
		CONF_OK(c, store_log_run(c->s, &run, &c->err));
	}
	static const lit_param lit[] = {{"?L4", "10"}, {"?1", "'x'"}, {"?2", "0"},
					{"?3", "-1"}, {"?5", "-1"}, {"?6", "''"},
					{"?7", "0"}, {"?8", "0"}};
	char key[128];
	explain_key(c, ST_RUNS_LIST_JOB, lit, sizeof(lit) / sizeof(lit[0]), "runs", key,
		    sizeof(key));
	assert_string_equal(key, "runs_job_name_fire");
}

/* Issue 30 item 2: the overdue check, which every node runs every 5 s,
 * reads the jobs with a silence limit through jobs_overdue, never by
 * scanning every job (at 100,000 jobs the scan outlived the driver's read
 * timeout with three nodes, and the server ran the abandoned scans on:
 * W2 fell below one node's rate).  Without the index MariaDB reads the
 * jobs through jobs_due_prio (paused = 0) or the whole table. */
static void test_overdue_find_plan(void **state)
{
	conf_ctx *c = *state;
	conf_put(c, 50, "quiet", 1000);
	static const lit_param lit[] = {{"?1", "1000"}};
	char key[128];
	explain_key(c, ST_OVERDUE_FIND, lit, 1, "j", key, sizeof(key));
	assert_string_equal(key, "jobs_overdue");
}

int main(void)
{
	admin_url = getenv("DBCRON_TEST_MYSQL");
	if (!admin_url || !*admin_url) {
		fprintf(stderr, "test_store_mysql: DBCRON_TEST_MYSQL is not set; it must be the dbcron "
				"URL of a MySQL or MariaDB server (start one with "
				"`bash scripts/mariadb-tmp.sh start DIR`)\n");
		return 1;
	}
	/* the whole suite in the form for servers without INSERT ... RETURNING */
	static char forced[1024];
	if (getenv("DBCRON_TEST_MYSQL_NO_RETURNING")) {
		snprintf(forced, sizeof(forced), "%s%cinsert_returning=0", admin_url,
			 strchr(admin_url, '?') ? '&' : '?');
		admin_url = forced;
	}
	store_conf_fresh_url = my_fresh_url;
	store_conf_release_url = my_release_url;
	const struct CMUnitTest tests[] = {
		STORE_CONFORMANCE_TESTS,
		STORE_CONFORMANCE_FAULT_TESTS,
		STORE_CONFORMANCE_NEEDS_TESTS,
		STORE_CONFORMANCE_AUDIT_TESTS,
		STORE_CONFORMANCE_EDIT_TESTS,
		cmocka_unit_test(test_mask_and_bad_urls),
		cmocka_unit_test(test_round_trips_constant),
		cmocka_unit_test(test_no_returning_form),
		cmocka_unit_test(test_put_insert_slices),
		cmocka_unit_test(test_concurrent_init),
		cmocka_unit_test(test_reconnect_after_restart),
		CONF_T(test_runs_of_one_job_plan),
		CONF_T(test_overdue_find_plan),
	};
	int failed = cmocka_run_group_tests_name("store_mysql", tests, NULL, NULL);
	for (int i = 1; i <= db_seq; i++) {
		char text[128];
		snprintf(text, sizeof(text), "DROP DATABASE IF EXISTS dbcron_t_%d_%d", (int)getpid(), i);
		admin_exec(text);
	}
	return failed;
}
