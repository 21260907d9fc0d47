/*
 * Tags and their caps (issue 28 item 3, docs/scheduler.md "Concurrency
 * caps"): a job names tags with --tag (kept as one text, one tag a line,
 * dbcron_job.tags, read with model_targets_next as the reaction lists
 * are); `dbcron tag set T --max-running N` caps the live runs of T's jobs
 * in the whole cluster.  Syntax only: whether a tag has a cap is the
 * store's.
 */
#ifndef DBCRON_MODEL_TAGS_H
#define DBCRON_MODEL_TAGS_H

#include <stdbool.h>

#include "dbcron/error.h"

/* The longest tag name. */
#define MODEL_TAG_MAX 64
/* The largest cap. */
#define MODEL_TAG_CAP_MAX 1000000

/* t checked: 1..MODEL_TAG_MAX of [A-Za-z0-9_.-]; DBCRON_EINVAL with a
 * message otherwise. */
int model_tag_check(const char *t, dbcron_err *err);

/* Whether the tag list (one a line, may be NULL) holds t. */
bool model_tags_has(const char *list, const char *t);

#endif
