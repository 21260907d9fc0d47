/*
 * The PostgreSQL errors that end a session (classify.h).  Owns no state.
 *
 * A server that stopped being the primary answers in several ways, and
 * none of them is fixed by retrying on the same session: a demoted primary
 * or a standby refuses writes (25006 read_only_sql_transaction), a server
 * shutting down or restarting ends sessions (57P01 admin_shutdown, 57P02
 * crash_shutdown, 57P03 cannot_connect_now, and the rest of class 57P
 * operator_intervention), the connection itself fails
 * (class 08), and a session can be left read-only (hot standby,
 * default_transaction_read_only on).  Each of them forces a reconnect, so
 * that libpq's target_session_attrs=read-write, with a multi-host URL,
 * finds the new primary.  A reconnect costs a little; a node retrying
 * writes on a read-only server would stop scheduling until an operator
 * restarts it.  The class is DBCRON_ECONN, which the protocol already
 * reads as "outcome unknown" for a write (dialect.h): a refused write did
 * not commit, and doubting it only costs a read back.
 */
#include <string.h>

#include "store/pg/classify.h"

static bool is(const char *st, const char *code)
{
	return strncmp(st, code, strlen(code)) == 0;
}

pg_err_kind pg_classify(const char *sqlstate, bool conn_bad)
{
	const char *st = sqlstate ? sqlstate : "";
	if (conn_bad || is(st, "08") || is(st, "57P") || is(st, "25006"))
		return PG_ERR_RECONNECT;
	/* serialization, deadlock, lock_timeout, statement_timeout */
	if (is(st, "40001") || is(st, "40P01") || is(st, "55P03") || is(st, "57014"))
		return PG_ERR_BUSY;
	if (is(st, "23"))
		return PG_ERR_CONSTRAINT;
	return PG_ERR_OTHER;
}

bool pg_session_read_only(const char *in_hot_standby, const char *default_read_only)
{
	return (in_hot_standby && strcmp(in_hot_standby, "on") == 0) ||
	       (default_read_only && strcmp(default_read_only, "on") == 0);
}
