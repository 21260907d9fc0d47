/*
 * Run parameters: the key rule, the job's declaration "KEY[=DEFAULT],..."
 * and the JSON object a run carries (params.h says what each is for).
 * Owns nothing beyond the calls; no I/O.  Keeps: a run's object holds only
 * valid keys with bounded string values, at most MODEL_PARAM_MAX of them,
 * and only declared keys when the job declares any.
 */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "core/alloc.h"
#include "core/text.h"
#include "model/params.h"

bool model_param_key_ok(const char *k, size_t len)
{
	if (len == 0 || len > MODEL_PARAM_KEY_MAX)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = k[i];
		bool alpha = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
		if (!alpha && !(i > 0 && c >= '0' && c <= '9'))
			return false;
	}
	return true;
}

/* One item of a declaration: [p, end) split at its first '='. */
typedef struct decl_item {
	const char *key, *dflt; /* dflt NULL when none */
	size_t klen, dlen;
} decl_item;

/* The next item of *p (advanced past it and its comma); false at the end. */
static bool decl_next(const char **p, decl_item *it)
{
	if (!*p || !**p)
		return false;
	const char *end = strchr(*p, ',');
	if (!end)
		end = *p + strlen(*p);
	const char *eq = memchr(*p, '=', (size_t)(end - *p));
	it->key = *p;
	it->klen = (size_t)((eq ? eq : end) - *p);
	it->dflt = eq ? eq + 1 : NULL;
	it->dlen = eq ? (size_t)(end - eq - 1) : 0;
	*p = *end ? end + 1 : end;
	return true;
}

static bool decl_has(const char *decl, const char *key, size_t klen, decl_item *found)
{
	decl_item it;
	for (const char *p = decl; decl_next(&p, &it);)
		if (it.klen == klen && !memcmp(it.key, key, klen)) {
			if (found)
				*found = it;
			return true;
		}
	return false;
}

bool model_params_declares(const char *decl, const char *key, size_t klen)
{
	return decl && decl_has(decl, key, klen, NULL);
}

bool model_param_reserved(const char *k, size_t len)
{
	size_t n = strlen(MODEL_PARAM_UPSTREAM);
	return len >= n && strncmp(k, MODEL_PARAM_UPSTREAM, n) == 0;
}

int model_params_decl_check(const char *decl, dbcron_err *err)
{
	decl_item it;
	size_t n = 0;
	if (!decl || !*decl)
		return dbcron_err_set(err, DBCRON_EINVAL, "expected KEY[=DEFAULT],...");
	for (const char *p = decl; decl_next(&p, &it);) {
		if (!model_param_key_ok(it.key, it.klen))
			return dbcron_err_set(err, DBCRON_EINVAL,
					      "'%.*s': a parameter key is [A-Za-z_][A-Za-z0-9_]*, "
					      "at most %d bytes", (int)(it.klen > 80 ? 80 : it.klen),
					      it.key, MODEL_PARAM_KEY_MAX);
		if (model_param_reserved(it.key, it.klen))
			return dbcron_err_set(err, DBCRON_EINVAL,
					      "'%.*s': " MODEL_PARAM_UPSTREAM "* keys are reserved "
					      "for job: reactions", (int)(it.klen > 80 ? 80 : it.klen),
					      it.key);
		if (it.dlen > MODEL_PARAM_VALUE_MAX)
			return dbcron_err_set(err, DBCRON_EINVAL,
					      "parameter '%.*s': its default is over %d bytes",
					      (int)it.klen, it.key, MODEL_PARAM_VALUE_MAX);
		decl_item first;
		if (decl_has(decl, it.key, it.klen, &first) && first.key != it.key)
			return dbcron_err_set(err, DBCRON_EINVAL, "parameter '%.*s' declared twice",
					      (int)it.klen, it.key);
		if (++n > MODEL_PARAM_MAX)
			return dbcron_err_set(err, DBCRON_EINVAL, "more than %d parameters",
					      MODEL_PARAM_MAX);
	}
	if (decl[strlen(decl) - 1] == ',')
		return dbcron_err_set(err, DBCRON_EINVAL, "an empty item at the end");
	return DBCRON_OK;
}

/* The declared keys, "a, b", for a refusal's message. */
static void decl_keys(const char *decl, char *buf, size_t len)
{
	decl_item it;
	size_t at = 0;
	buf[0] = '\0';
	for (const char *p = decl; decl_next(&p, &it) && at < len;)
		at += (size_t)dbcron__textf(buf + at, len - at, "%s%.*s", at ? ", " : "",
					    (int)it.klen, it.key);
}

/* Check one "KEY=VALUE" and set it in o. */
static int put_given(json_t *o, const char *job, const char *decl, const char *kv,
		     dbcron_err *err)
{
	const char *eq = strchr(kv, '=');
	size_t klen = eq ? (size_t)(eq - kv) : strlen(kv);
	char keys[512];
	if (!eq)
		return dbcron_err_set(err, DBCRON_EINVAL, "parameter '%.80s': expected KEY=VALUE", kv);
	if (!model_param_key_ok(kv, klen))
		return dbcron_err_set(err, DBCRON_EINVAL,
				      "parameter '%.*s': a key is [A-Za-z_][A-Za-z0-9_]*, at most %d bytes",
				      (int)(klen > 80 ? 80 : klen), kv, MODEL_PARAM_KEY_MAX);
	if (model_param_reserved(kv, klen))
		return dbcron_err_set(err, DBCRON_EINVAL,
				      "parameter '%.*s': " MODEL_PARAM_UPSTREAM "* keys are set by "
				      "job: reactions only", (int)klen, kv);
	if (strlen(eq + 1) > MODEL_PARAM_VALUE_MAX)
		return dbcron_err_set(err, DBCRON_EINVAL, "parameter '%.*s': its value is over %d bytes",
				      (int)klen, kv, MODEL_PARAM_VALUE_MAX);
	if (decl && !decl_has(decl, kv, klen, NULL)) {
		decl_keys(decl, keys, sizeof(keys));
		return dbcron_err_set(err, DBCRON_EINVAL,
				      "job '%s' takes no parameter '%.*s' (it takes: %s)", job,
				      (int)klen, kv, keys);
	}
	char key[MODEL_PARAM_KEY_MAX + 1];
	memcpy(key, kv, klen);
	key[klen] = '\0';
	if (json_object_get(o, key))
		return dbcron_err_set(err, DBCRON_EINVAL, "parameter '%s' given twice", key);
	json_t *v = json_string(eq + 1);
	if (!v) /* not UTF-8 (or out of memory) */
		return dbcron_err_set(err, DBCRON_EINVAL, "parameter '%s': its value is not UTF-8", key);
	if (json_object_set_new(o, key, v))
		return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory");
	return DBCRON_OK;
}

int model_params_for_run(const char *job, const char *decl, const char *const *kv, size_t n,
			 char **json, dbcron_err *err)
{
	int rc = DBCRON_OK;
	decl_item it;
	*json = NULL;
	if (n > MODEL_PARAM_MAX)
		return dbcron_err_set(err, DBCRON_EINVAL, "more than %d parameters", MODEL_PARAM_MAX);
	if (decl && !*decl)
		decl = NULL;
	json_t *o = json_object();
	if (!o)
		return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory");
	for (size_t i = 0; i < n && !rc; i++)
		rc = put_given(o, job ? job : "", decl, kv[i], err);
	/* the declared defaults of the keys not given */
	for (const char *p = decl; !rc && decl_next(&p, &it);) {
		char key[MODEL_PARAM_KEY_MAX + 1];
		if (!it.dflt || it.klen > MODEL_PARAM_KEY_MAX)
			continue;
		memcpy(key, it.key, it.klen);
		key[it.klen] = '\0';
		if (!json_object_get(o, key) &&
		    json_object_set_new(o, key, json_stringn(it.dflt, it.dlen)))
			rc = dbcron_err_set(err, DBCRON_ENOMEM, "out of memory");
	}
	if (!rc && json_object_size(o)) {
		char *text = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII);
		/* jansson allocates with malloc: hand the caller our own copy */
		if (!text || !(*json = dbcron__strdup(text)))
			rc = dbcron_err_set(err, DBCRON_ENOMEM, "out of memory");
		free(text);
	}
	json_decref(o);
	return rc;
}

int model_params_each(const char *run_json, const char *decl, model_param_cb cb, void *ctx)
{
	json_t *o = run_json ? json_loads(run_json, 0, NULL) : NULL;
	const char *key;
	json_t *v;
	decl_item it;
	int rc = 0;
	if (o && !json_is_object(o)) {
		json_decref(o);
		o = NULL;
	}
	json_object_foreach(o, key, v)
	{
		if (json_is_string(v) && model_param_key_ok(key, strlen(key)) &&
		    (rc = cb(ctx, key, json_string_value(v))))
			goto out;
	}
	for (const char *p = decl; p && decl_next(&p, &it);) {
		char k[MODEL_PARAM_KEY_MAX + 1], val[MODEL_PARAM_VALUE_MAX + 1];
		if (!it.dflt || !model_param_key_ok(it.key, it.klen) ||
		    it.dlen > MODEL_PARAM_VALUE_MAX)
			continue;
		memcpy(k, it.key, it.klen);
		k[it.klen] = '\0';
		if (o && json_object_get(o, k))
			continue;
		memcpy(val, it.dflt, it.dlen);
		val[it.dlen] = '\0';
		if ((rc = cb(ctx, k, val)))
			goto out;
	}
out:
	json_decref(o);
	return rc;
}
