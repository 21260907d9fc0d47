/*
 * What the files of src/app/ share and no front end sees: the job vector's
 * collector and order (a stored-jobs callback and strcmp by name, so a
 * lookup by bsearch agrees with the sort), and the wait for the nodes that
 * pause, delete and a pruning apply make before they return.
 */
#ifndef DBCRON_APP_INT_H
#define DBCRON_APP_INT_H

#include "app/app.h"

typedef app_job_vec job_vec;

/* store_job_cb: a copy of job appended to ctx (a job_vec); on out of
 * memory sets jv->rc and stops the walk. */
int app__collect_job(void *ctx, const dbcron_job *job);
/* qsort/bsearch order of dbcron_job by name (strcmp). */
int app__cmp_job_name(const void *a, const void *b);
/* Waits (at most 10 s) for every live node to see the last change; when
 * one did not confirm, says why in warning (wlen bytes), else leaves it. */
void app__wait_nodes(store *s, char *warning, size_t wlen);

#endif
