/*
 * Freeing what the store hands out (claim results, lock and node rows).
 * The operations themselves are protocol.c.
 */
#include <string.h>

#include "core/alloc.h"
#include "store/store.h"

void store_claim_result_clear(store_claim_result *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nruns; i++)
		dbcron_run_clear(&r->runs[i].run);
	for (size_t i = 0; i < r->njobs; i++)
		dbcron_job_clear(&r->jobs[i]);
	for (size_t i = 0; i < r->naside; i++) {
		dbcron__free(r->aside[i].name);
		dbcron__free(r->aside[i].why);
	}
	dbcron__free(r->runs);
	dbcron__free(r->jobs);
	dbcron__free(r->aside);
	memset(r, 0, sizeof(*r));
}

void store_lock_row_clear(store_lock_row *r)
{
	if (!r)
		return;
	dbcron__free(r->name);
	dbcron__free(r->owner);
	memset(r, 0, sizeof(*r));
}

void store_node_row_clear(store_node_row *r)
{
	if (!r)
		return;
	dbcron__free(r->node_id);
	dbcron__free(r->host);
	dbcron__free(r->state);
	memset(r, 0, sizeof(*r));
}
