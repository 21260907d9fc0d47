/*
 * MariaDB Galera: which members may take a node's writes, and one writer
 * member at a time (docs/cluster.md "MariaDB Galera").
 *
 * FOR UPDATE SKIP LOCKED locks rows on one member only: two nodes writing
 * through two members would both take a row, and only certification at
 * COMMIT would save the claim (one of them fails, as a deadlock, and is
 * retried).  The supported shape is one writer member: every node lists the
 * members in one order and writes through the first that answers.  What
 * keeps it, cheaply: a node's connection is made only to a member that is
 * synced and in the primary component; each heartbeat of a node records the
 * member it writes through (table galera_writers, this dialect's own) and
 * looks for another live node on another member; while one is seen, the
 * node claims nothing (its started runs still end), and when that lasts two
 * leases a node not on its URL's first host reconnects from the first, so
 * that nodes that drifted apart (a member back from the dead, a node
 * started meanwhile) come together again.
 *
 * Owns the member's name and the split state of the handle (mysql_int.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/timeutil.h"
#include "store/mysql/mysql_int.h"

/* The member as the registry names it: its node name alone is the host
 * name by default, and two members may share a host. */
#define MEMBER_OF_SESSION "CONCAT(@@wsrep_node_name, '@', @@hostname, ':', @@port)"

static const char *const writer_seen =
	"INSERT INTO galera_writers (node, member, seen_ms) VALUES (?1, ?2, " DBNOW ") "
	"ON DUPLICATE KEY UPDATE member = VALUES(member), seen_ms = VALUES(seen_ms)";
static const char *const writer_other =
	"SELECT node, member FROM galera_writers WHERE node <> ?1 AND member <> ?2 AND "
	"seen_ms > " DBNOW " - ?3 ORDER BY node LIMIT 1";

/* Rows of a plain query, two columns each, handed to fn. */
static int each_row(store_conn *q, const char *text, const char *what,
		    void (*fn)(store_conn *q, const char *a, const char *b, void *ctx), void *ctx,
		    dbcron_err *err)
{
	if (my__lib.mysql_real_query(q->db, text, (unsigned long)strlen(text)))
		return my__fail_db(q, what, err);
	MYSQL_RES *r = my__lib.mysql_store_result(q->db);
	if (!r)
		return my__fail_db(q, what, err);
	unsigned nf = my__lib.mysql_num_fields(r);
	for (MYSQL_ROW row; (row = my__lib.mysql_fetch_row(r));)
		fn(q, row[0], nf > 1 ? row[1] : NULL, ctx);
	my__lib.mysql_free_result(r);
	return DBCRON_OK;
}

typedef struct wsrep_state {
	bool on, ready, primary, synced;
	char state[64];
} wsrep_state;

static void read_state(store_conn *q, const char *name, const char *value, void *ctx)
{
	(void)q;
	wsrep_state *w = ctx;
	const char *v = value ? value : "";
	if (!name)
		return;
	if (strcmp(name, "WSREP_ON") == 0)
		w->on = strcmp(v, "ON") == 0;
	else if (strcmp(name, "WSREP_READY") == 0)
		w->ready = strcmp(v, "ON") == 0;
	else if (strcmp(name, "WSREP_CLUSTER_STATUS") == 0)
		w->primary = strcmp(v, "Primary") == 0;
	else if (strcmp(name, "WSREP_LOCAL_STATE_COMMENT") == 0) {
		w->synced = strcmp(v, "Synced") == 0;
		snprintf(w->state, sizeof(w->state), "%s", v);
	}
}

static void read_member(store_conn *q, const char *name, const char *unused, void *ctx)
{
	(void)unused;
	(void)ctx;
	snprintf(q->member, sizeof(q->member), "%s", name ? name : "");
}

int my__galera_check(store_conn *q, dbcron_err *err)
{
	wsrep_state w = {0};
	int rc = each_row(q,
			  "SELECT VARIABLE_NAME, VARIABLE_VALUE FROM information_schema.GLOBAL_VARIABLES "
			  "WHERE VARIABLE_NAME = 'WSREP_ON' UNION ALL SELECT VARIABLE_NAME, VARIABLE_VALUE "
			  "FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME IN ('WSREP_READY', "
			  "'WSREP_CLUSTER_STATUS', 'WSREP_LOCAL_STATE_COMMENT')",
			  "connecting: reading the Galera state", read_state, &w, err);
	q->galera = w.on;
	if (rc || !w.on)
		return rc;
	const my_host *h = &q->hosts[q->cur];
	if (!w.ready || !w.primary || !w.synced)
		return dbcron_err_set(err, DBCRON_ECONN,
				      "%s: host %s:%u is a Galera member that cannot take writes (%s%s)",
				      q->masked, h->name ? h->name : "localhost", h->port,
				      w.primary ? "" : "not in the primary component, ",
				      w.state[0] ? w.state : "not ready");
	/* one causal read: what the cluster committed before is applied
	 * here before this session reads anything; a member that cannot
	 * catch up in time (its cluster stalled) is passed over as well */
	rc = each_row(q, "SET STATEMENT wsrep_sync_wait = 1 FOR SELECT " MEMBER_OF_SESSION,
		      "connecting: waiting for the Galera member to catch up", read_member, NULL, err);
	if (rc && rc != DBCRON_ENOMEM && err)
		err->code = DBCRON_ECONN;
	return rc && rc != DBCRON_ENOMEM ? DBCRON_ECONN : rc;
}

int my__galera_beat(store_conn *q, const char *node_id, dbcron_err *err)
{
	if (!q->lease_ms || !node_id)
		return DBCRON_OK;
	store_param p[] = {sp_text(node_id), sp_text(q->member), sp_i64(q->lease_ms)};
	int rc;
	if ((rc = my__prepare(q, MY_ST_WRITER_SEEN, writer_seen, err)) ||
	    (rc = my__run_parts(q, MY_ST_WRITER_SEEN, p, 3, NULL, 0, false, err)) ||
	    (rc = my__prepare(q, MY_ST_WRITER_OTHER, writer_other, err)) ||
	    (rc = my__run_parts(q, MY_ST_WRITER_OTHER, p, 3, NULL, 0, false, err)))
		goto out;
	if (q->nrows && q->ncols >= 2) {
		if (!q->split_since)
			q->split_since = dbcron__mono_ms();
		snprintf(q->split_with, sizeof(q->split_with), "node %s through %s",
			 q->cells[0] ? q->cells[0] : "?", q->cells[1] ? q->cells[1] : "?");
	} else {
		q->split_since = 0;
	}
out:
	my__clear_result(q);
	return rc;
}

int my__galera_claim_ok(store_conn *q, dbcron_err *err)
{
	if (!q->split_since)
		return DBCRON_OK;
	if (q->cur == 0 || dbcron__mono_ms() - q->split_since < 2 * q->lease_ms)
		return dbcron_err_set(err, DBCRON_EBUSY,
				      "claim: not claiming while two Galera members take writes: this "
				      "node writes through %s, %s (one writer member at a time)",
				      q->member, q->split_with);
	/* the next operation connects again, from the first host */
	my__lib.mysql_close(q->db);
	q->db = NULL;
	my__close_stmts(q);
	q->connected = false;
	q->cur = 0;
	q->rotate = false;
	q->split_since = 0;
	return dbcron_err_set(err, DBCRON_EBUSY,
			      "claim: this node wrote through Galera member %s and %s for two leases: "
			      "connecting again from the first host of %s",
			      q->member, q->split_with, q->masked);
}
