/*
 * The handler executor: a registry of named C callbacks and the built-ins
 * "noop" and "sleep".
 *
 * Owns the registry (process-global).  Built-ins live in a const table
 * looked up without any lock, so "noop" costs two clock reads and a few
 * string compares.  Registered handlers sit in a growable array behind a
 * read-write lock: registration (rare; also while nodes run) takes it for
 * writing, lookups from worker threads for reading.  The callback itself
 * is always called with no lock held.
 *
 * Invariants: a name is registered at most once (built-ins included);
 * entries are never removed, so a looked-up (fn, user) stays valid; the
 * generation grows with each entry, so names read with generation g are
 * every name registered up to g (a node re-reads them when it moved).
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/text.h"
#include "core/alloc.h"
#include "core/timeutil.h"
#include "dbcron/handler.h"
#include "exec/exec.h"

struct handler_entry {
	char *name;
	dbcron_handler_fn fn;
	void *user;
};

static int builtin_noop(const dbcron_handler_ctx *ctx, void *user,
			char *errbuf, size_t errlen);
static int builtin_sleep(const dbcron_handler_ctx *ctx, void *user,
			 char *errbuf, size_t errlen);

static const struct {
	const char *name;
	dbcron_handler_fn fn;
} builtins[] = {
	{"noop", builtin_noop},
	{"sleep", builtin_sleep},
};

static pthread_rwlock_t reg_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct handler_entry *reg;
static size_t reg_len, reg_cap;
/* +1 per registration, written under reg_lock; atomic so that a node's
 * db thread can poll it every heartbeat without the lock. */
static atomic_uint_fast64_t reg_gen;

/* ---- built-ins ---- */

static int builtin_noop(const dbcron_handler_ctx *ctx, void *user,
			char *errbuf, size_t errlen)
{
	return 0;
}

/* Exit codes of "sleep": 1 = stopped early, 2 = bad argument. */
static int builtin_sleep(const dbcron_handler_ctx *ctx, void *user,
			 char *errbuf, size_t errlen)
{
	int64_t ms;
	dbcron_err err = {0};

	if (!ctx->arg || !*ctx->arg) {
		snprintf(errbuf, errlen, "sleep: needs a duration argument (e.g. 250ms)");
		return 2;
	}
	if (dbcron__parse_duration(ctx->arg, 1, &ms, &err) != DBCRON_OK) {
		dbcron__textf(errbuf, errlen, "sleep: %s", err.msg);
		return 2;
	}
	int64_t end = dbcron__mono_ms() + ms;
	for (;;) {
		if (dbcron_handler_should_stop(ctx)) {
			const exec_cancel *c = ctx->cancel;
			snprintf(errbuf, errlen, "%s",
				 c && atomic_load(&c->requested) ? "cancelled" : "timed out");
			return 1;
		}
		int64_t left = end - dbcron__mono_ms();
		if (left <= 0)
			return 0;
		/* Slices of at most 50 ms: the promise exec.h makes about
		 * noticing a cancel. */
		if (left > 50)
			left = 50;
		struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)left * 1000000L};
		nanosleep(&ts, NULL);
	}
}

/* ---- registry ---- */

static dbcron_handler_fn builtin_lookup(const char *name)
{
	for (size_t i = 0; i < sizeof(builtins) / sizeof(builtins[0]); i++)
		if (strcmp(builtins[i].name, name) == 0)
			return builtins[i].fn;
	return NULL;
}

/* Caller holds reg_lock (read or write). */
static const struct handler_entry *reg_find(const char *name)
{
	for (size_t i = 0; i < reg_len; i++)
		if (strcmp(reg[i].name, name) == 0)
			return &reg[i];
	return NULL;
}

/* Copies (fn, user) out so the caller runs the callback unlocked. */
static bool handler_lookup(const char *name, dbcron_handler_fn *fn, void **user)
{
	dbcron_handler_fn b = builtin_lookup(name);
	if (b) {
		*fn = b;
		*user = NULL;
		return true;
	}
	bool found = false;
	pthread_rwlock_rdlock(&reg_lock);
	const struct handler_entry *e = reg_find(name);
	if (e) {
		*fn = e->fn;
		*user = e->user;
		found = true;
	}
	pthread_rwlock_unlock(&reg_lock);
	return found;
}

int dbcron_handler_register(const char *name, dbcron_handler_fn fn, void *user)
{
	int rc;

	if (!fn || dbcron__name_check("handler name", name, true, NULL) != DBCRON_OK)
		return DBCRON_EINVAL;
	if (builtin_lookup(name))
		return DBCRON_EEXISTS;
	char *copy = dbcron__strdup(name);
	if (!copy)
		return DBCRON_ENOMEM;
	pthread_rwlock_wrlock(&reg_lock);
	if (reg_find(name)) {
		rc = DBCRON_EEXISTS;
		goto out_unlock;
	}
	void *arr = reg;
	if (dbcron__grow(&arr, &reg_cap, reg_len + 1, sizeof(*reg)) != 0) {
		rc = DBCRON_ENOMEM;
		goto out_unlock;
	}
	reg = arr;
	reg[reg_len].name = copy;
	reg[reg_len].fn = fn;
	reg[reg_len].user = user;
	reg_len++;
	atomic_fetch_add(&reg_gen, 1);
	copy = NULL;
	rc = DBCRON_OK;
out_unlock:
	pthread_rwlock_unlock(&reg_lock);
	dbcron__free(copy);
	return rc;
}

bool dbcron_handler_exists(const char *name)
{
	dbcron_handler_fn fn;
	void *user;

	return name && handler_lookup(name, &fn, &user);
}

uint64_t exec_handler_gen(void)
{
	return atomic_load(&reg_gen);
}

int exec_handler_names(char ***names, size_t *n, uint64_t *gen)
{
	const size_t nb = sizeof(builtins) / sizeof(builtins[0]);
	int rc = DBCRON_ENOMEM;
	size_t k = 0;

	*names = NULL;
	*n = 0;
	pthread_rwlock_rdlock(&reg_lock);
	char **v = dbcron__calloc(nb + reg_len, sizeof(*v));
	if (!v)
		goto out_unlock;
	for (size_t i = 0; i < nb; i++)
		if (!(v[k++] = dbcron__strdup(builtins[i].name)))
			goto out_unlock;
	for (size_t i = 0; i < reg_len; i++)
		if (!(v[k++] = dbcron__strdup(reg[i].name)))
			goto out_unlock;
	*names = v;
	*n = k;
	if (gen)
		*gen = atomic_load(&reg_gen);
	v = NULL;
	rc = DBCRON_OK;
out_unlock:
	pthread_rwlock_unlock(&reg_lock);
	exec_handler_names_free(v, k);
	return rc;
}

void exec_handler_names_free(char **names, size_t n)
{
	for (size_t i = 0; names && i < n; i++)
		dbcron__free(names[i]);
	dbcron__free(names);
}

bool dbcron_handler_should_stop(const dbcron_handler_ctx *ctx)
{
	const exec_cancel *c = ctx->cancel;

	if (c && atomic_load(&c->requested))
		return true;
	return ctx->deadline_mono_ms >= 0 && dbcron__mono_ms() >= ctx->deadline_mono_ms;
}

/* ---- the executor ---- */

void exec_handler(const exec_req *req, exec_result *res)
{
	const dbcron_job *job = req->job;
	dbcron_handler_fn fn;
	void *user;
	char errbuf[512];

	memset(res, 0, sizeof(*res));
	res->mono_start_ms = dbcron__mono_ms();
	res->state = DBCRON_RUN_FAILED;
	if (!job->handler || !*job->handler) {
		exec__set_error(res, "handler job has no handler name");
		goto out_done;
	}
	if (!handler_lookup(job->handler, &fn, &user)) {
		exec__set_error(res, "unknown handler '%s'", job->handler);
		goto out_done;
	}

	dbcron_handler_ctx ctx = {
		.job = job->name,
		.arg = job->arg,
		.fire_at_ms = req->fire_at_ms,
		.attempt = req->attempt,
		.run_id = req->run_id,
		.node = req->node_id,
		.deadline_mono_ms = job->timeout_ms > 0 &&
					    job->timeout_ms < INT64_MAX - res->mono_start_ms ?
					    res->mono_start_ms + job->timeout_ms : -1,
		.cancel = req->cancel,
		.params = req->params,
		.nparams = req->nparams,
		.node_index = req->node_index,
		.node_total = req->node_total,
	};
	errbuf[0] = '\0';
	int rc = fn(&ctx, user, errbuf, sizeof(errbuf));
	int64_t now = dbcron__mono_ms();
	errbuf[sizeof(errbuf) - 1] = '\0';

	/* The deadline wins over the return value: a handler that overran
	 * its timeout is TIMED_OUT even if it then reported success, as a
	 * shell job killed at its deadline would be. */
	if (ctx.deadline_mono_ms >= 0 && now >= ctx.deadline_mono_ms) {
		char d[32];
		dbcron__format_duration(job->timeout_ms, d, sizeof(d));
		res->state = DBCRON_RUN_TIMED_OUT;
		exec__set_error(res, "timed out after %s", d);
	} else if (rc == 0) {
		res->state = DBCRON_RUN_SUCCEEDED;
	} else if (req->cancel && atomic_load(&req->cancel->requested)) {
		exec__set_error(res, "cancelled");
	} else {
		res->has_exit_code = true;
		res->exit_code = rc;
		if (errbuf[0])
			exec__set_error(res, "%s", errbuf);
		else
			exec__set_error(res, "handler '%s' returned %d", job->handler, rc);
	}
out_done:
	res->mono_end_ms = dbcron__mono_ms();
}

/* A name, not its presence in this process: the handler may exist only in
 * the programs that embed a node (routing sends the job there; front ends
 * warn about names no local process knows, model_jobdef_check_handler). */
static int handler_validate(const dbcron_job *job, dbcron_err *err)
{
	if (!job->handler || !job->handler[0])
		return dbcron_err_set(err, DBCRON_EINVAL, "job '%s': a handler job needs a handler name",
				      job->name ? job->name : "");
	/* stored, routed on and quoted in reasons: bounded like every name */
	return dbcron__name_check("handler name", job->handler, true, err);
}

/* Cancel and timeout are cooperative (dbcron_handler_should_stop), so no
 * EXEC_CAP_PREEMPT: a callback cannot be stopped from outside. */
const exec_ops exec_handler_ops = {
	.version = EXEC_OPS_VERSION,
	.kind = DBCRON_EXEC_HANDLER,
	.name = "handler",
	.caps = EXEC_CAP_CANCEL | EXEC_CAP_TIMEOUT,
	.validate = handler_validate,
	.run = exec_handler,
};

const char *dbcron_handler_param(const dbcron_handler_ctx *ctx, const char *key)
{
	size_t klen = key ? strlen(key) : 0;
	for (size_t i = 0; ctx && klen && i < ctx->nparams; i++) {
		const char *kv = ctx->params[i];
		if (kv && !strncmp(kv, key, klen) && kv[klen] == '=')
			return kv + klen + 1;
	}
	return NULL;
}
