/*
 * Reaction targets: the syntax of each kind and the one-a-line list a job
 * keeps them in.  Invariant kept: a target that passed model_target_check
 * holds no control character (so no line break splits it) and is one of
 * the three kinds, with a job name, a URL with a host, or an absolute
 * program path.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "model/target.h"

static int bad(dbcron_err *err, const char *t, const char *why)
{
	return dbcron_err_set(err, DBCRON_EINVAL, "'%.200s': %s", t, why);
}

/* scheme://host[:port][/rest]: a host of letters, digits, '.', '-' or a
 * bracketed IPv6 address, a port of 1 to 65535, no spaces anywhere. */
static int check_url(const char *t, const char *after, dbcron_err *err)
{
	const char *h = after, *e;
	if (*h == '[') {
		e = strchr(h, ']');
		if (!e || e == h + 1 || strspn(h + 1, "0123456789abcdefABCDEF:.") != (size_t)(e - h - 1))
			return bad(err, t, "unparseable URL: a bad [IPv6] host");
		e++;
	} else {
		e = h + strspn(h, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_");
		if (e == h)
			return bad(err, t, "unparseable URL: no host");
	}
	if (*e == ':') {
		char *end;
		long port = strtol(e + 1, &end, 10);
		if (end == e + 1 || port < 1 || port > 65535)
			return bad(err, t, "unparseable URL: the port is not 1-65535");
		e = end;
	}
	if (*e && *e != '/' && *e != '?')
		return bad(err, t, "unparseable URL: unexpected character after the host");
	if (strpbrk(t, " \t"))
		return bad(err, t, "unparseable URL: a space (write it as %20)");
	return DBCRON_OK;
}

int model_target_check(const char *t, model_target_kind *kind, dbcron_err *err)
{
	if (!t || !*t)
		return dbcron_err_set(err, DBCRON_EINVAL,
				      "an empty target: expected job:NAME, http(s)://URL or exec:PATH");
	if (strlen(t) > MODEL_TARGET_MAX)
		return bad(err, t, "longer than 700 bytes");
	for (const char *p = t; *p; p++)
		if (iscntrl((unsigned char)*p))
			return bad(err, t, "a control character");
	if (strncmp(t, "job:", 4) == 0) {
		if (!t[4] || strpbrk(t + 4, " \t"))
			return bad(err, t, t[4] ? "a space in the job name" : "no job name after job:");
		if (kind)
			*kind = MODEL_TARGET_JOB;
		return DBCRON_OK;
	}
	if (strncmp(t, "http://", 7) == 0 || strncmp(t, "https://", 8) == 0) {
		int rc = check_url(t, t + (t[4] == 's' ? 8 : 7), err);
		if (!rc && kind)
			*kind = MODEL_TARGET_HTTP;
		return rc;
	}
	if (strncmp(t, "exec:", 5) == 0) {
		if (t[5] != '/')
			return bad(err, t, "exec: needs an absolute program path (exec:/path [ARGS])");
		if (kind)
			*kind = MODEL_TARGET_EXEC;
		return DBCRON_OK;
	}
	return bad(err, t, "unknown target: expected job:NAME, http(s)://URL or exec:PATH [ARGS]");
}

const char *model_targets_next(const char **pos, size_t *len)
{
	const char *p = *pos;
	while (p && *p == '\n')
		p++;
	if (!p || !*p)
		return NULL;
	*len = strcspn(p, "\n");
	*pos = p + *len;
	return p;
}

bool model_targets_has(const char *list, const char *t, size_t len)
{
	const char *p;
	size_t n;
	while ((p = model_targets_next(&list, &n)))
		if (n == len && memcmp(p, t, len) == 0)
			return true;
	return false;
}

int model_react_kind_of(dbcron_run_state end, bool retry_follows)
{
	switch (end) {
	case DBCRON_RUN_SUCCEEDED:
		return MODEL_REACT_SUCCESS;
	case DBCRON_RUN_MISFIRED:
		return MODEL_REACT_MISFIRE;
	case DBCRON_RUN_FAILED:
	case DBCRON_RUN_TIMED_OUT:
	case DBCRON_RUN_ABANDONED:
		return retry_follows ? 0 : MODEL_REACT_FAILURE;
	default:
		return 0;
	}
}

const char *model_react_targets(const dbcron_job *j, int kind)
{
	switch (kind) {
	case MODEL_REACT_FAILURE:
		return j->on_failure;
	case MODEL_REACT_SUCCESS:
		return j->on_success;
	case MODEL_REACT_MISFIRE:
		return j->on_misfire;
	case MODEL_REACT_OVERDUE:
		return j->on_overdue;
	default:
		return NULL;
	}
}

static const char *const kind_names[] = {NULL, "failure", "success", "misfire", "overdue"};
static const char *const state_names[] = {NULL, "pending", "delivering", "delivered", "failed"};

const char *model_react_kind_name(int kind)
{
	return kind > 0 && kind < 5 ? kind_names[kind] : "?";
}

const char *model_event_state_name(int state)
{
	return state > 0 && state < 5 ? state_names[state] : "?";
}

int model_event_state_parse(const char *s)
{
	for (int i = 1; s && i < 5; i++)
		if (strcmp(state_names[i], s) == 0)
			return i;
	return -1;
}
