/*
 * The node's delivery thread (react.h): network and programs only, never
 * the store.  It takes the deliveries the db thread handed over (todo),
 * runs every webhook as a transfer of one libcurl multi handle and every
 * exec: program as a child it polls, and puts each result on done for
 * the db thread, which it wakes through the node's kick.
 *
 * Invariants kept:
 *  one thread and no thread per request (issue 26 item 4): at most
 *    REACT_MAX_OUT deliveries are out at once (the db thread claims no
 *    more), each transfer bounded by its timeout, each program by 30 s;
 *  nothing here waits on one delivery: the loop sleeps in the multi
 *    handle's poll (or poll(2) before the first webhook), which the wake
 *    pipe, a transfer's progress or a program's stdin ends, and at most
 *    50 ms while a program runs (a look at its exit that does not wait,
 *    proc_wait_until with a past deadline, then proc_reap);
 *  at a stop, work in progress gets until cut_at, then is cut and goes
 *    back as REACT_HANDBACK; deliveries not yet started stay on todo for
 *    react_finish to hand back.
 */
#define _GNU_SOURCE /* pipe2 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <glib.h>

#include "core/alloc.h"
#include "core/log.h"
#include "core/timeutil.h"
#include "model/target.h"
#include "react/react_int.h"

/* How long the loop sleeps while a program runs (it is polled). */
#define EXEC_POLL_MS 50
/* Results gathered before the db thread is woken for them. */
#define PUBLISH_BATCH 16
#define PUBLISH_MS 10

void react_sign(const char *key, size_t keylen, const char *body, size_t len, char hex[65])
{
	gchar *h = g_compute_hmac_for_data(G_CHECKSUM_SHA256, (const guchar *)key, keylen,
					   (const guchar *)body, len);
	snprintf(hex, 65, "%s", h ? h : "");
	g_free(h);
}

void react_list_push(react_list *l, react_job *j)
{
	j->next = NULL;
	if (l->tail)
		l->tail->next = j;
	else
		l->head = j;
	l->tail = j;
}

react_job *react_list_pop(react_list *l)
{
	react_job *j = l->head;
	if (j) {
		l->head = j->next;
		if (!l->head)
			l->tail = NULL;
		j->next = NULL;
	}
	return j;
}

void react_list_move(react_list *dst, react_list *src)
{
	if (!src->head)
		return;
	if (dst->tail)
		dst->tail->next = src->head;
	else
		dst->head = src->head;
	dst->tail = src->tail;
	src->head = src->tail = NULL;
}

void react_job_free(react_job *j)
{
	if (!j)
		return;
	dbcron__free(j->ev.job_name);
	dbcron__free(j->ev.target);
	dbcron__free(j->ev.claim_token);
	dbcron__free(j->body);
	dbcron__free(j->run_user);
	dbcron__free(j->run_group);
	dbcron__free(j);
}

void react_wake(react_deliverer *d)
{
	/* a full pipe already says "wake up" */
	ssize_t w = write(d->wake[1], "w", 1);
	(void)w;
}

/* The secret file's first line (a trailing newline is not part of it). */
static int read_secret(const char *path, react_deliverer *d, dbcron_err *err)
{
	gchar *text = NULL;
	gsize len = 0;
	GError *ge = NULL;
	if (!g_file_get_contents(path, &text, &len, &ge)) {
		int rc = dbcron_err_set(err, DBCRON_EIO, "--notify-secret-file %s: %s", path,
					ge ? ge->message : "cannot read");
		g_clear_error(&ge);
		return rc;
	}
	while (len && (text[len - 1] == '\n' || text[len - 1] == '\r'))
		len--;
	if (!len) {
		g_free(text);
		return dbcron_err_set(err, DBCRON_EINVAL, "--notify-secret-file %s: empty", path);
	}
	d->secret = dbcron__strndup(text, len);
	d->secret_len = len;
	g_free(text);
	return d->secret ? DBCRON_OK : dbcron_err_set(err, DBCRON_ENOMEM, "out of memory");
}

/* The delivery thread's own state. */
typedef struct loop {
	react_deliverer *d;
	react_multi *m;    /* made at the first webhook */
	react_list execs;  /* programs running */
	react_list out;    /* results not yet handed over */
	int64_t first_out; /* mono ms the oldest of them was seen, 0 none */
} loop;

static void start_one(loop *lp, react_job *j)
{
	react_deliverer *d = lp->d;
	bool ok = j->kind == MODEL_TARGET_HTTP
			  ? react_http_start(&lp->m, j, d->secret, d->secret_len)
			  : react_exec_start(j);
	if (!ok)
		react_list_push(&lp->out, j);
	else if (j->kind != MODEL_TARGET_HTTP)
		react_list_push(&lp->execs, j);
}

static void poll_execs(loop *lp, int64_t now)
{
	react_list keep = {0};
	for (react_job *j; (j = react_list_pop(&lp->execs));)
		react_list_push(react_exec_poll(j, now) ? &lp->out : &keep, j);
	lp->execs = keep;
}

/* Results to the db thread, which is woken (no lock of ours held); it
 * writes each lot in one transaction, so a few are gathered first: up
 * to PUBLISH_BATCH, for at most PUBLISH_MS, none held when nothing else
 * is out (force). */
static void publish(loop *lp, int64_t now, bool force)
{
	size_t n = 0;
	for (react_job *j = lp->out.head; j; j = j->next)
		n++;
	if (!n)
		return;
	if (!lp->first_out)
		lp->first_out = now;
	if (!force && n < PUBLISH_BATCH && now - lp->first_out < PUBLISH_MS)
		return;
	lp->first_out = 0;
	pthread_mutex_lock(&lp->d->mu);
	react_list_move(&lp->d->done, &lp->out);
	pthread_mutex_unlock(&lp->d->mu);
	if (lp->d->kick)
		lp->d->kick(lp->d->kick_ctx);
}

/* The stop's bound passed: what is still out goes back. */
static void cut_all(loop *lp)
{
	for (react_job *j; (j = react_http_first(lp->m));) {
		react_http_cut(lp->m, j);
		j->out = REACT_HANDBACK;
		snprintf(j->why, sizeof(j->why), "cut: the node stopped");
		react_list_push(&lp->out, j);
	}
	for (react_job *j; (j = react_list_pop(&lp->execs));) {
		react_exec_cut(j);
		j->out = REACT_HANDBACK;
		snprintf(j->why, sizeof(j->why), "killed: the node stopped");
		react_list_push(&lp->out, j);
	}
}

static void *deliver_main(void *arg)
{
	loop lp = {.d = arg};
	react_deliverer *d = lp.d;
	const dbcron__log_sink *prev = dbcron__log_bind(d->log);
	sigset_t pipe_set;
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_set, NULL);
	for (;;) {
		react_list got = {0};
		pthread_mutex_lock(&d->mu);
		bool stop = d->stop;
		int64_t cut_at = d->cut_at;
		if (!stop)
			react_list_move(&got, &d->todo);
		pthread_mutex_unlock(&d->mu);
		for (react_job *j; (j = react_list_pop(&got));)
			start_one(&lp, j);
		int64_t now = dbcron__mono_ms();
		poll_execs(&lp, now);
		bool busy = lp.execs.head || react_http_first(lp.m);
		if (stop && (!busy || now >= cut_at)) {
			cut_all(&lp);
			publish(&lp, now, true);
			break;
		}
		publish(&lp, now, !busy || stop);
		int64_t wait = lp.execs.head ? EXEC_POLL_MS : 1000;
		if (lp.out.head && lp.first_out + PUBLISH_MS - now < wait)
			wait = lp.first_out + PUBLISH_MS - now;
		if (wait < 0)
			wait = 0;
		if (stop && cut_at - now < wait)
			wait = cut_at - now;
		react_http_run(lp.m, d->wake[0], &lp.execs, (int)wait, &lp.out);
		char buf[64];
		while (read(d->wake[0], buf, sizeof(buf)) > 0)
			;
	}
	react_multi_free(lp.m);
	dbcron__log_bind(prev);
	return NULL;
}

void react__free(react_deliverer *d)
{
	pthread_mutex_destroy(&d->mu);
	for (int i = 0; i < 2; i++)
		if (d->wake[i] >= 0)
			close(d->wake[i]);
	if (d->secret)
		memset(d->secret, 0, d->secret_len);
	dbcron__free(d->secret);
	dbcron__free(d->node_id);
	dbcron__free(d);
}

int react_start(const react_config *cfg, react_deliverer **out, dbcron_err *err)
{
	*out = NULL;
	react_deliverer *d = dbcron__calloc(1, sizeof(*d));
	if (!d)
		return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory");
	d->wake[0] = d->wake[1] = -1;
	pthread_mutex_init(&d->mu, NULL);
	d->node_id = dbcron__strdup(cfg->node_id);
	d->kick = cfg->kick;
	d->kick_ctx = cfg->kick_ctx;
	d->log = cfg->log;
	d->claim_at = INT64_MAX;
	d->sweep_at = dbcron__mono_ms(); /* what was left before we started */
	int rc = !d->node_id ? dbcron_err_set(err, DBCRON_ENOMEM, "out of memory") : DBCRON_OK;
	if (!rc && cfg->secret_file && *cfg->secret_file)
		rc = read_secret(cfg->secret_file, d, err);
	if (!rc && pipe2(d->wake, O_CLOEXEC | O_NONBLOCK))
		rc = dbcron_err_set(err, DBCRON_EIO, "delivery thread: pipe: %s", strerror(errno));
	if (!rc && pthread_create(&d->thread, NULL, deliver_main, d))
		rc = dbcron_err_set(err, DBCRON_EIO, "cannot start the delivery thread");
	if (rc) {
		react__free(d);
		return rc;
	}
	d->started = true;
	*out = d;
	return DBCRON_OK;
}

void react_stop(react_deliverer *d, int64_t cut_ms)
{
	if (!d || !d->started)
		return;
	pthread_mutex_lock(&d->mu);
	d->stop = true;
	d->cut_at = dbcron__mono_ms() + (cut_ms > 0 ? cut_ms : 0);
	pthread_mutex_unlock(&d->mu);
	react_wake(d);
	pthread_join(d->thread, NULL);
	d->started = false;
}
