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

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mysql.h>

#include "store_conformance.h"
#include "store_conformance_faults.h"

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
		snprintf(sock, sizeof(sock), "%s", so + 7);
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

static tdb conf_dbs[128];
static int conf_ndbs;

static const char *my_fresh_url(void)
{
	assert_true(conf_ndbs < 128);
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
static void claim_and_apply_trips(int n, long *claim, long *apply)
{
	const char *url = my_fresh_url();
	store *s = NULL;
	dbcron_err err = {0};
	if (store_open(url, &s, &err) || store_migrate(s, NULL, NULL, &err))
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
	claim_and_apply_trips(10, &c10, &a10);
	claim_and_apply_trips(500, &c500, &a500);
	print_message("server statements: claim of 10 fires %ld, of 500 %ld; apply of 10 %ld, of 500 %ld\n",
		      c10, c500, a10, a500);
	assert_true(c10 > 0 && a10 > 0);
	assert_int_equal(c500, c10);
	assert_int_equal(a500, a10);
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
	store_conf_fresh_url = my_fresh_url;
	store_conf_release_url = my_release_url;
	const struct CMUnitTest tests[] = {
		STORE_CONFORMANCE_TESTS,
		STORE_CONFORMANCE_FAULT_TESTS,
		cmocka_unit_test(test_mask_and_bad_urls),
		cmocka_unit_test(test_round_trips_constant),
	};
	int failed = cmocka_run_group_tests_name("store_mysql", tests, NULL, NULL);
	for (int i = 1; i <= db_seq; i++) {
		char text[128];
		snprintf(text, sizeof(text), "DROP DATABASE IF EXISTS dbcron_t_%d_%d", (int)getpid(), i);
		admin_exec(text);
	}
	return failed;
}
