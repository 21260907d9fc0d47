/*
 * Tag names (model/tags.h): checked here, once, for `--tag`, `job apply`,
 * the HTTP API and `dbcron tag set`.  A tag is an identifier, so that it
 * fits every dialect's key column and needs no quoting anywhere.
 */
#include <string.h>

#include "model/tags.h"
#include "model/target.h"

int model_tag_check(const char *t, dbcron_err *err)
{
	size_t n = t ? strlen(t) : 0;
	if (n == 0)
		return dbcron_err_set(err, DBCRON_EINVAL, "empty tag name");
	if (n > MODEL_TAG_MAX)
		return dbcron_err_set(err, DBCRON_EINVAL, "tag '%.64s...' is longer than %d characters",
				      t, MODEL_TAG_MAX);
	size_t ok = strspn(t, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-");
	if (ok != n)
		return dbcron_err_set(err, DBCRON_EINVAL,
				      "tag '%s': only letters, digits, '_', '.' and '-' (not '%c')",
				      t, t[ok]);
	return DBCRON_OK;
}

bool model_tags_has(const char *list, const char *t)
{
	return model_targets_has(list, t, strlen(t));
}
