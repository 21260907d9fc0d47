/*
 * What a PostgreSQL error means for the session that met it (classify.c):
 * the one rule pg.c applies to every failed statement, apart from libpq so
 * that it is tested without a server.
 */
#ifndef DBCRON_STORE_PG_CLASSIFY_H
#define DBCRON_STORE_PG_CLASSIFY_H

#include <stdbool.h>

typedef enum pg_err_kind {
	PG_ERR_OTHER,      /* DBCRON_EDB: the statement's own fault */
	PG_ERR_RECONNECT,  /* DBCRON_ECONN: this session is no use any more */
	PG_ERR_BUSY,       /* DBCRON_EBUSY: a lock or a timeout, retried */
	PG_ERR_CONSTRAINT, /* DBCRON_ECONSTRAINT */
} pg_err_kind;

/* The kind of an error with SQLSTATE sqlstate (NULL or "" when libpq gave
 * none: a client-side failure), conn_bad when libpq says the connection
 * is gone. */
pg_err_kind pg_classify(const char *sqlstate, bool conn_bad);

/* A session that must not be written through: a hot standby, or a server
 * whose transactions start read-only (the values of the ParameterStatus
 * reports in_hot_standby and default_transaction_read_only, NULL when the
 * server does not report them: before PostgreSQL 14). */
bool pg_session_read_only(const char *in_hot_standby, const char *default_read_only);

#endif
