/*
 * Every statement id of stmt.h has SQL text in every dialect (dialect.h:
 * "[ST__COUNT], every entry set"), and a name and a description for the
 * fault seam and the messages.  A statement added to stmt.h and left out of
 * one dialect's sql.h would otherwise show only when that dialect runs it:
 * as a crash on a NULL text, on the one database a test may not reach.  No
 * database is needed: the tables are read, not run.  And the run states
 * the SQL text compares with are the numbers of the C enum.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "store/dialect.h"
#include "store/stmt.h"

static const store_dialect *const dialects[] = {
	&store_sqlite_dialect,
	&store_pg_dialect,
	&store_mysql_dialect,
};

static void test_every_dialect_has_every_statement(void **state)
{
	(void)state;
	for (size_t k = 0; k < sizeof(dialects) / sizeof(dialects[0]); k++) {
		const store_dialect *d = dialects[k];
		assert_int_equal(STORE_DIALECT_VERSION, d->version);
		assert_non_null(d->sql);
		for (int id = 0; id < ST__COUNT; id++)
			if (!d->sql[id] || !*d->sql[id])
				fail_msg("dialect %s has no SQL text for statement %s (%d)", d->name,
					 store_stmt_id_name(id), id);
	}
}

/* The state numbers spliced into the SQL are the C enum's, whichever way
 * a future edit writes their text. */
static void test_sql_states_are_the_enums(void **state)
{
	(void)state;
	static const struct {
		const char *sql;
		int value;
	} pairs[] = {
		{SQL_RS_SCHEDULED, DBCRON_RUN_SCHEDULED}, {SQL_RS_RUNNING, DBCRON_RUN_RUNNING},
		{SQL_RS_SUCCEEDED, DBCRON_RUN_SUCCEEDED}, {SQL_RS_ABANDONED, DBCRON_RUN_ABANDONED},
		{SQL_EXEC_HANDLER, DBCRON_EXEC_HANDLER},
	};
	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		char want[16];
		snprintf(want, sizeof(want), "%d", pairs[i].value);
		assert_string_equal(pairs[i].sql, want);
	}
}

static void test_every_statement_is_named(void **state)
{
	(void)state;
	for (int id = 0; id < ST__COUNT; id++) {
		const char *name = store_stmt_id_name(id), *what = store_stmt_what(id);
		if (!name || !*name || !what || !*what)
			fail_msg("statement %d has no name or description", id);
		assert_int_equal(id, store_stmt_by_name(name));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_dialect_has_every_statement),
		cmocka_unit_test(test_every_statement_is_named),
		cmocka_unit_test(test_sql_states_are_the_enums),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
