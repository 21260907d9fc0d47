/*
 * What a PostgreSQL error means for a node's session (src/store/pg/
 * classify.c), without a server: the errors of a server that is no longer
 * the primary (a demoted primary or standby refusing writes, a server
 * shutting down or not yet accepting connections, a lost connection, a
 * read-only session) give the session up so that the next operation
 * reconnects (and, with a multi-host URL and target_session_attrs, finds
 * the new primary); lock waits and timeouts are retried on it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "store/pg/classify.h"

static void test_classify(void **state)
{
	(void)state;
	static const struct {
		const char *sqlstate;
		bool bad;
		pg_err_kind want;
	} cases[] = {
		{"25006", false, PG_ERR_RECONNECT}, /* read_only_sql_transaction */
		{"57P01", false, PG_ERR_RECONNECT}, /* admin_shutdown */
		{"57P02", false, PG_ERR_RECONNECT}, /* crash_shutdown */
		{"57P03", false, PG_ERR_RECONNECT}, /* cannot_connect_now */
		{"08006", false, PG_ERR_RECONNECT}, /* connection_failure */
		{"08003", false, PG_ERR_RECONNECT}, /* connection_does_not_exist */
		{"08P01", false, PG_ERR_RECONNECT}, /* protocol_violation */
		{NULL, true, PG_ERR_RECONNECT},     /* libpq: the connection is gone */
		{"", true, PG_ERR_RECONNECT},
		{"42P01", true, PG_ERR_RECONNECT},  /* whatever it said, the session is gone */
		{"40001", false, PG_ERR_BUSY},      /* serialization_failure */
		{"40P01", false, PG_ERR_BUSY},      /* deadlock_detected */
		{"55P03", false, PG_ERR_BUSY},      /* lock_not_available (lock_timeout) */
		{"57014", false, PG_ERR_BUSY},      /* query_canceled (statement_timeout) */
		{"23505", false, PG_ERR_CONSTRAINT},
		{"23503", false, PG_ERR_CONSTRAINT},
		{"42P01", false, PG_ERR_OTHER},
		{"25P02", false, PG_ERR_OTHER},     /* in_failed_sql_transaction */
		{"25001", false, PG_ERR_OTHER},     /* active_sql_transaction */
		{NULL, false, PG_ERR_OTHER},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		pg_err_kind got = pg_classify(cases[i].sqlstate, cases[i].bad);
		if (got != cases[i].want)
			fail_msg("%s (connection %s): kind %d, want %d",
				 cases[i].sqlstate ? cases[i].sqlstate : "(none)",
				 cases[i].bad ? "bad" : "ok", got, cases[i].want);
	}
}

static void test_read_only_session(void **state)
{
	(void)state;
	assert_true(pg_session_read_only("on", "off"));   /* a hot standby */
	assert_true(pg_session_read_only("off", "on"));   /* default_transaction_read_only */
	assert_true(pg_session_read_only(NULL, "on"));
	assert_false(pg_session_read_only("off", "off")); /* a primary */
	assert_false(pg_session_read_only(NULL, NULL));   /* before PostgreSQL 14: not said */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_classify),
		cmocka_unit_test(test_read_only_session),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
