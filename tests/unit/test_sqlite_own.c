/*
 * store_sqlite_own_process: the dbcron program turns SQLite's memory
 * statistics off before anything uses SQLite (their mutex on every
 * allocation was ~7 % of a node's samples draining one-shot jobs).  A binary
 * of its own, since the setting only takes before SQLite's first use in the
 * process, and so that the statistics it reads are this test's alone.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "store/store.h"

static void test_statistics_off(void **state)
{
	(void)state;
	char dir[] = "/tmp/dbcron-own.XXXXXX", url[128], path[96];
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/db.sqlite", dir);
	snprintf(url, sizeof(url), "sqlite:%s", path);
	store_sqlite_own_process();
	store *s;
	dbcron_err err = {0};
	int from = 0, to = 0;
	assert_int_equal(store_open(url, &s, &err), DBCRON_OK);
	assert_int_equal(store_migrate(s, &from, &to, &err), DBCRON_OK);
	assert_true(to > 0);
	/* the whole schema built, and SQLite counted none of what it took */
	assert_int_equal(sqlite3_memory_highwater(0), 0);
	assert_int_equal(sqlite3_memory_used(), 0);
	store_close(s);
	unlink(path);
	char side[128];
	snprintf(side, sizeof(side), "%s-wal", path);
	unlink(side);
	snprintf(side, sizeof(side), "%s-shm", path);
	unlink(side);
	assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_statistics_off),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
