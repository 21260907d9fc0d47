/*
 * Private to src/store/mysql/: the connection state mysql.c keeps and
 * script.c runs statements on, the markers of a statement script, and the
 * interpreter's entry points.  mysql.c calls script.c, hosts.c and
 * galera.c; galera.c calls script.c; never the reverse.
 */
#ifndef DBCRON_STORE_MYSQL_INT_H
#define DBCRON_STORE_MYSQL_INT_H

#include <stdbool.h>
#include <stdint.h>

#include <mysql.h>

#include "core/dynlib.h"
#include "store/dialect.h"
#include "store/stmt.h"

/* libmariadb, loaded when the first MariaDB handle opens (core/dynlib.h):
 * every libmariadb function of mysql.c and script.c goes through my__lib. */
#define MY_LIBMARIADB_FUNCS(X)                                                         \
	X(mysql_close) X(mysql_errno) X(mysql_error) X(mysql_fetch_row)                \
	X(mysql_field_count) X(mysql_free_result) X(mysql_get_server_info)             \
	X(mysql_get_server_version) X(mysql_init) X(mysql_num_fields) X(mysql_options) \
	X(mysql_real_connect) X(mysql_real_query) X(mysql_stmt_affected_rows)          \
	X(mysql_stmt_bind_param) X(mysql_stmt_bind_result) X(mysql_stmt_close)         \
	X(mysql_stmt_errno) X(mysql_stmt_error) X(mysql_stmt_execute)                  \
	X(mysql_stmt_fetch) X(mysql_stmt_fetch_column) X(mysql_stmt_field_count)       \
	X(mysql_stmt_free_result) X(mysql_stmt_init) X(mysql_stmt_prepare)             \
	X(mysql_stmt_result_metadata) X(mysql_store_result)
typedef struct my_libmariadb {
	MY_LIBMARIADB_FUNCS(DBCRON_DYNLIB_MEMBER)
} my_libmariadb;
extern my_libmariadb my__lib;
/* Loads libmariadb (once); before any my__lib call. */
int my__load(dbcron_err *err);

/* The database clock (invariant 4) in epoch ms.  NOW(3) is fixed for one
 * statement; sessions run in UTC. */
#define DBNOW "CAST(ROUND(UNIX_TIMESTAMP(NOW(3)) * 1000) AS SIGNED)"

/* A statement's text may be a script of parts separated by PART, each
 * part's text led by its prefixes. */
#define PART "\x1f"
#define EACH "\x03"       /* prefix: once per row of the result before it */
#define IF_CHANGED "\x02" /* prefix: only if the part before changed a row */

#define MAX_PARTS 4
#define MAX_REFS 96 /* a job row's columns, one reference each, and room to grow */
#define MY_BATCHES 2 /* batch parameters one part may bind */

enum ref_kind { REF_SCALAR, REF_CELL, REF_LIMIT };

typedef struct part {
	MYSQL_STMT *st;
	char *text; /* with '?' only */
	bool each, if_changed;
	int nrefs;
	struct {
		unsigned char kind;
		unsigned char idx; /* 0-based */
	} refs[MAX_REFS];
} part;

typedef struct stmt {
	bool ready;
	int nparts;
	part parts[MAX_PARTS];
} stmt;

/* Statements of the dialect's own, prepared like the protocol's, after
 * them in stmts[] (galera.c). */
enum { MY_ST_WRITER_SEEN = ST__COUNT, MY_ST_WRITER_OTHER, MY_ST__END };

/* Hosts a URL may list: members of one Galera cluster, tried in order. */
#define MY_HOSTS_MAX 16

typedef struct my_host {
	char *name; /* NULL: the driver's default (localhost, the socket) */
	unsigned port; /* 0: the default */
} my_host;

struct store_conn {
	MYSQL *db;
	char masked[256];
	/* what the URL said, for reconnects */
	my_host hosts[MY_HOSTS_MAX];
	int nhosts;
	int cur; /* the host connected to, or last tried */
	/* the connection to hosts[cur] was lost: the next connect starts at
	 * the host after it */
	bool rotate;
	char *user, *pass, *dbname, *socket;
	/* a node's connection (tune): its lease, and the read, write and
	 * connect timeouts in whole seconds that follow from it; 0: none */
	int64_t lease_ms;
	unsigned io_timeout_s;
	bool connected, in_tx, mariadb;
	/* sessions made again after a lost one (store_reconnects: a node
	 * that reconnected reaps nobody for a lease) */
	unsigned long reconnects;
	/* MariaDB Galera (wsrep on): the member's name as the writer
	 * registry records it, and since when (monotonic ms, 0: never) the
	 * registry shows another live node writing through another member */
	bool galera;
	char member[160];
	int64_t split_since;
	char split_with[200];
	/* the server has INSERT ... RETURNING and the URL did not turn it off */
	bool insert_returning, no_returning_asked;
	char tune[256]; /* SET for a node's session, "" for none */
	stmt stmts[MY_ST__END];
	/* the current result, copied out: rows of ncols cells (NULL: NULL) */
	char **cells;
	size_t ncells, cap, nrows;
	int ncols;
	long row; /* -1 before the first */
	int64_t changes;
	/* per execute */
	/* the JSON of each batch parameter of a part, in the order bound: a
	 * claim statement has two lists (handlers, the slow pool's jobs) */
	store_text json[MY_BATCHES];
	/* a text cell with bad bytes replaced, one per bound parameter: two
	 * cells of one row may both need it */
	store_text clean[MAX_REFS];
	int64_t ivals[MAX_REFS];
	unsigned long lens[MAX_REFS];
	my_bool nulls[MAX_REFS];
};

/* ---- script.c ---- */

/* A failed statement's server error as a dbcron code (the connection
 * marked lost when it is); fail_db reads it from the connection. */
int my__fail_db(store_conn *q, const char *what, dbcron_err *err);
/* Run plain text (no parameters, its result discarded). */
int my__run_text(store_conn *q, const char *text, const char *what, dbcron_err *err);
/* Parse and prepare statement id from text (sql.h), once per connection. */
int my__prepare(store_conn *q, int id, const char *text, dbcron_err *err);
/* Every statement's parts closed and freed (a reconnect prepares again). */
void my__close_stmts(store_conn *q);
/* All parts of prepared statement id for one batch row (brow; none when bt
 * is NULL), appending their rows to the result; made: the statement hands
 * back cell 0 of a batch row it changed. */
int my__run_parts(store_conn *q, int id, const store_param *p, int np, const store_batch *bt,
		  size_t brow, bool made, dbcron_err *err);
/* Empties the copied result. */
void my__clear_result(store_conn *q);

/* ---- hosts.c ---- */

/* q's hosts, user, password, database and options from a mysql:// or
 * mariadb:// URL; DBCRON_ENOMEM without a message. */
int my__parse_url(store_conn *q, const char *url, dbcron_err *err);
/* Frees what my__parse_url set (the password wiped first). */
void my__free_url(store_conn *q);

/* ---- galera.c ---- */

/*
 * Right after a connect: is the server a Galera member, and one that may
 * take writes (synced, in the primary component)?  DBCRON_ECONN when it
 * is not (the caller tries the next host); a member's reads then wait
 * until it has applied what the cluster committed before (one causal
 * read), so that a node that moved to it sees its own last writes.
 */
int my__galera_check(store_conn *q, dbcron_err *err);
/*
 * Before a node's heartbeat (node_id its id): record the member this
 * node writes through, and look for another live node writing through
 * another one (one writer member at a time, docs/cluster.md).
 */
int my__galera_beat(store_conn *q, const char *node_id, dbcron_err *err);
/* Before a claim: DBCRON_EBUSY while the split the last heartbeat saw
 * lasts, and (it lasting two leases) the connection dropped so that the
 * next one starts again from the first host of the URL. */
int my__galera_claim_ok(store_conn *q, dbcron_err *err);

#endif
