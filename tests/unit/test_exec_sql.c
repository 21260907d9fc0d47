/*
 * The SQL executor in-process, on SQLite files (the servers' halves run
 * against real PostgreSQL and MariaDB in tests/it/sql_job*.sh): its entry
 * in the executor table, validation (empty, undeclared or malformed
 * placeholders, one inside quotes, a relative database file), and runs
 * through exec_run: values bound once per key (a key used twice is one
 * parameter), the output of a count and of rows (header, NULL, the
 * first 20 of more), head and tail kept, a missing value, two statements,
 * a missing database, the timeout and a cancel seen before the statement
 * ends (the progress handler), the database file and the default URL.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/timeutil.h"
#include "exec/exec.h"

static char dir[64], url[128], dbpath[96];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/dbcron-test-sql.XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(dbpath, sizeof(dbpath), "%s/t.db", dir);
	snprintf(url, sizeof(url), "sqlite:%s", dbpath);
	sqlite3 *db;
	if (sqlite3_open(dbpath, &db) != SQLITE_OK)
		return -1;
	int rc = sqlite3_exec(db,
			      "CREATE TABLE t (a TEXT, b TEXT);"
			      "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c "
			      "WHERE x < 25) INSERT INTO t SELECT 'r' || x, NULL FROM c;",
			      NULL, NULL, NULL);
	sqlite3_close(db);
	return rc == SQLITE_OK ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];
	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void sql_job(dbcron_job *j, const char *sql, const char *params)
{
	dbcron_job_init(j);
	j->name = "s";
	j->executor = DBCRON_EXEC_SQL;
	j->sql = (char *)sql;
	j->params = (char *)params;
}

/* Run j with params kv (NULL-terminated) on the test database. */
static void run(const dbcron_job *j, const char *const *kv, exec_cancel *c, size_t cap,
		exec_result *res)
{
	size_t n = 0;
	while (kv && kv[n])
		n++;
	exec_req req = {.job = j, .params = kv, .nparams = n, .cancel = c, .capture_bytes = cap,
			.db_url = url};
	exec_run(&req, res);
}

static void test_table_entry(void **state)
{
	(void)state;
	const exec_ops *o = exec_lookup(DBCRON_EXEC_SQL);
	assert_ptr_equal(o, &exec_sql_ops);
	assert_ptr_equal(exec_lookup_name("sql"), o);
	assert_int_equal(o->caps, EXEC_CAP_OUTPUT | EXEC_CAP_CANCEL | EXEC_CAP_TIMEOUT |
					  EXEC_CAP_PREEMPT);
}

static void refused(const char *sql, const char *params, const char *file, const char *want)
{
	dbcron_job j;
	dbcron_err err = {0};
	sql_job(&j, sql, params);
	j.sql_db_file = (char *)file;
	assert_int_equal(exec_validate(&j, &err), DBCRON_EINVAL);
	if (!strstr(err.msg, want))
		fail_msg("'%s': want '%s' in '%s'", sql, want, err.msg);
}

static void test_validate(void **state)
{
	(void)state;
	dbcron_job j;
	dbcron_err err = {0};
	sql_job(&j, "SELECT ${param.a}, '$' || \"x\" || ${param.b}", "a,b=1");
	assert_int_equal(exec_validate(&j, &err), DBCRON_OK);
	/* comments are not statements: a quote or a placeholder there is text */
	sql_job(&j, "SELECT ${param.a} -- it's ${param.zz}\n/* don't ${param.y */ + 1", "a");
	assert_int_equal(exec_validate(&j, &err), DBCRON_OK);
	refused(" \n", NULL, NULL, "empty statement");
	refused("SELECT ${param.a}", NULL, NULL, "does not declare");
	refused("SELECT ${param.a}", "b", NULL, "uses ${param.a}, which the job does not declare");
	refused("SELECT ${param.a", "a", NULL, "malformed placeholder at byte 8");
	refused("SELECT ${param.}", "a", NULL, "malformed");
	refused("SELECT 'x${param.a}'", "a", NULL, "inside a quoted string");
	refused("SELECT \"${param.a}\"", "a", NULL, "inside a quoted string");
	refused("SELECT 1", NULL, "rel/url", "not an absolute path");
	/* a process of its own's options are refused by the table */
	sql_job(&j, "SELECT 1", NULL);
	j.user = "root";
	assert_int_equal(exec_validate(&j, &err), DBCRON_EINVAL);
	assert_non_null(strstr(err.msg, "only for a command"));
}

static void test_bound_values(void **state)
{
	(void)state;
	dbcron_job j;
	exec_result res = {0};
	static const char *const kv[] = {"a=it's; DROP TABLE t; --", "b=two", NULL};
	sql_job(&j, "INSERT INTO t VALUES (${param.a}, ${param.a} || ${param.b})", "a,b");
	run(&j, kv, NULL, 0, &res);
	assert_int_equal(res.state, DBCRON_RUN_SUCCEEDED);
	assert_string_equal(res.output, "1 row affected\n");
	assert_false(res.has_exit_code);
	exec_result_clear(&res);

	sql_job(&j, "SELECT a, b FROM t WHERE b = ${param.a} || ${param.b}", "a,b");
	run(&j, kv, NULL, 0, &res);
	assert_int_equal(res.state, DBCRON_RUN_SUCCEEDED);
	assert_string_equal(res.output, "a\tb\nit's; DROP TABLE t; --\tit's; DROP TABLE t; --two\n"
					"(1 row)\n");
	exec_result_clear(&res);

	/* a placeholder in a comment stays text, the one after it is bound */
	sql_job(&j, "SELECT /* ${param.a} */ ${param.b} AS v -- ${param.a}", "a,b");
	run(&j, kv, NULL, 0, &res);
	assert_int_equal(res.state, DBCRON_RUN_SUCCEEDED);
	assert_string_equal(res.output, "v\ntwo\n(1 row)\n");
	exec_result_clear(&res);

	sql_job(&j, "DELETE FROM t WHERE b IS NOT NULL", NULL);
	run(&j, NULL, NULL, 0, &res);
	assert_string_equal(res.output, "1 row affected\n");
	exec_result_clear(&res);
}

static void test_rows_output(void **state)
{
	(void)state;
	dbcron_job j;
	exec_result res = {0};
	char want[1024];
	size_t n = (size_t)snprintf(want, sizeof(want), "a\tb\n");
	for (int i = 1; i <= 20; i++)
		n += (size_t)snprintf(want + n, sizeof(want) - n, "r%d\tNULL\n", i);
	snprintf(want + n, sizeof(want) - n, "(first 20 of 25 rows)\n");
	sql_job(&j, "SELECT a, b FROM t ORDER BY rowid", NULL);
	run(&j, NULL, NULL, 0, &res);
	assert_int_equal(res.state, DBCRON_RUN_SUCCEEDED);
	assert_string_equal(res.output, want);
	exec_result_clear(&res);

	/* the head and tail kept, as a shell run's capture */
	run(&j, NULL, NULL, 16, &res);
	assert_non_null(strstr(res.output, "bytes omitted ...]"));
	assert_int_equal(strncmp(res.output, "a\tb\nr1\tNULL\nr2\tN", 16), 0);
	assert_string_equal(res.output + strlen(res.output) - 16, " 20 of 25 rows)\n");
	exec_result_clear(&res);
}

static void test_failures(void **state)
{
	(void)state;
	dbcron_job j;
	exec_result res = {0};

	sql_job(&j, "SELECT ${param.k}", "k");
	run(&j, NULL, NULL, 0, &res);
	assert_int_equal(res.state, DBCRON_RUN_FAILED);
	assert_non_null(strstr(res.error, "parameter 'k' has no value"));
	exec_result_clear(&res);

	sql_job(&j, "SELECT 1; SELECT 2", NULL);
	run(&j, NULL, NULL, 0, &res);
	assert_int_equal(res.state, DBCRON_RUN_FAILED);
	assert_non_null(strstr(res.error, "more than one statement"));
	exec_result_clear(&res);

	sql_job(&j, "INSERT INTO nope VALUES (1)", NULL);
	run(&j, NULL, NULL, 0, &res);
	assert_int_equal(res.state, DBCRON_RUN_FAILED);
	assert_non_null(strstr(res.error, "no such table: nope"));
	assert_non_null(strstr(res.error, url)); /* which database */
	exec_result_clear(&res);

	/* a database file that holds a URL of a missing file: never created */
	char file[128], missing[128];
	snprintf(file, sizeof(file), "%s/other.url", dir);
	snprintf(missing, sizeof(missing), "%s/missing.db", dir);
	FILE *f = fopen(file, "w");
	assert_non_null(f);
	fprintf(f, "sqlite:%s\n", missing);
	fclose(f);
	sql_job(&j, "SELECT 1", NULL);
	j.sql_db_file = file;
	run(&j, NULL, NULL, 0, &res);
	assert_int_equal(res.state, DBCRON_RUN_FAILED);
	assert_non_null(strstr(res.error, "cannot open SQLite database"));
	assert_int_equal(access(missing, F_OK), -1);
	exec_result_clear(&res);

	/* no database file and no URL from the node */
	sql_job(&j, "SELECT 1", NULL);
	exec_req req = {.job = &j};
	exec_run(&req, &res);
	assert_int_equal(res.state, DBCRON_RUN_FAILED);
	assert_non_null(strstr(res.error, "no database to run the statement on"));
	exec_result_clear(&res);
}

static void test_db_file(void **state)
{
	(void)state;
	dbcron_job j;
	exec_result res = {0};
	dbcron_err err = {0};
	char file[128];
	snprintf(file, sizeof(file), "%s/t.url", dir);
	FILE *f = fopen(file, "w");
	assert_non_null(f);
	fprintf(f, "  %s  \n", url);
	fclose(f);
	assert_int_equal(exec_sql_check_db_file(file, &err), DBCRON_OK);
	sql_job(&j, "SELECT count(*) AS n FROM t", NULL);
	j.sql_db_file = file;
	exec_req req = {.job = &j}; /* no URL of the node's: the file's */
	exec_run(&req, &res);
	assert_int_equal(res.state, DBCRON_RUN_SUCCEEDED);
	assert_string_equal(res.output, "n\n25\n(1 row)\n");
	exec_result_clear(&res);

	f = fopen(file, "w");
	fprintf(f, "http://example.org/\n");
	fclose(f);
	assert_int_equal(exec_sql_check_db_file(file, &err), DBCRON_EINVAL);
	assert_non_null(strstr(err.msg, "not a database URL"));
	assert_null(strstr(err.msg, "example.org")); /* never the content */
	assert_int_equal(exec_sql_check_db_file("/nonexistent/x.url", &err), DBCRON_EINVAL);
	assert_non_null(strstr(err.msg, "No such file"));
}

#define ENDLESS "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"

static void test_timeout_and_cancel(void **state)
{
	(void)state;
	dbcron_job j;
	exec_result res = {0};

	sql_job(&j, ENDLESS, NULL);
	j.timeout_ms = 300;
	int64_t t0 = dbcron__mono_ms();
	run(&j, NULL, NULL, 0, &res);
	int64_t took = dbcron__mono_ms() - t0;
	assert_int_equal(res.state, DBCRON_RUN_TIMED_OUT);
	assert_string_equal(res.error, "timed out after 300ms; statement cancelled on the server");
	assert_true(took >= 300 && took < 3000);
	exec_result_clear(&res);

	/* a cancel asked for: the statement stops at its next look */
	exec_cancel c = {0};
	atomic_store(&c.requested, 1);
	j.timeout_ms = 0;
	t0 = dbcron__mono_ms();
	run(&j, NULL, &c, 0, &res);
	assert_int_equal(res.state, DBCRON_RUN_FAILED);
	assert_string_equal(res.error, "cancelled");
	assert_true(dbcron__mono_ms() - t0 < 2000);
	exec_result_clear(&res);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table_entry),
		cmocka_unit_test(test_validate),
		cmocka_unit_test(test_bound_values),
		cmocka_unit_test(test_rows_output),
		cmocka_unit_test(test_failures),
		cmocka_unit_test(test_db_file),
		cmocka_unit_test(test_timeout_and_cancel),
	};
	/* a statement that is never stopped runs for ever: fail in a minute
	 * rather than at ctest's timeout (SIGALRM ends the process) */
	alarm(60);
	return cmocka_run_group_tests(tests, setup, teardown);
}
