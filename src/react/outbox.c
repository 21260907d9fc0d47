/*
 * The outbox on the db thread (react.h): every database call of the
 * reactions, on the node's own store handle.  A step writes the ends the
 * delivery thread reported, then claims when a claim is due and the
 * delivery thread has room, triggers job:NAME targets at once, builds the
 * JSON of the others and hands them over.
 *
 * When a claim is due (the poll rule, docs/reactions.md): events exist
 * only where an outcome with reaction targets was written, so a node
 * claims right after its own flush wrote one (react_step's `written`), at
 * the due time of each retry it scheduled, after a full batch (more may
 * wait), and otherwise sweeps every 5 s for what no one here knows of:
 * events of dead nodes (their claim lapsed with their lease), retries
 * other nodes scheduled, events left from before this node started.  A
 * node whose jobs have no reactions thus claims once every 5 s.
 *
 * Invariants kept: an event is delivered only under a claim this node
 * took, and its end is written fenced on that claim (store_event_finish),
 * so a node whose event was handed to another after it lost its lease
 * writes nothing; an end that failed to write is kept and written first
 * at the next step, never dropped; a claim whose outcome is unknown (its
 * reply lost) is read back by its token before the next claim.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/log.h"
#include "core/timeutil.h"
#include "model/target.h"
#include "react/react_int.h"

/* At most this many per claim, and a claim only with this much room:
 * REACT_MAX_OUT is two batches, one delivered while the next is claimed. */
#define CLAIM_BATCH (REACT_MAX_OUT / 2)
#define SWEEP_MS 5000
/* A retry is claimed this long after its due time as this node's clock
 * sees it: the database's must have passed it. */
#define DUE_SLACK_MS 20

/* Backoff before attempt a + 1: 1 s doubling, at most a minute. */
static int64_t backoff_ms(int a)
{
	int64_t ms = 1000;
	for (int i = 1; i < a && ms < 60000; i++)
		ms *= 2;
	return ms < 60000 ? ms : 60000;
}

static void random_token(char out[33])
{
	unsigned char b[16];
	if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b)) {
		uint64_t x = (uint64_t)dbcron__mono_us() ^ ((uint64_t)getpid() << 32);
		for (size_t i = 0; i < sizeof(b); i++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			b[i] = (unsigned char)x;
		}
	}
	static const char hex[] = "0123456789abcdef";
	for (size_t i = 0; i < sizeof(b); i++) {
		out[2 * i] = hex[b[i] >> 4];
		out[2 * i + 1] = hex[b[i] & 15];
	}
	out[32] = '\0';
}

/* ---- writing the ends ---- */

static void note_due(react_deliverer *d, int64_t due_mono)
{
	if (d->ndues < REACT_MAX_RETRY_DUES)
		d->dues[d->ndues++] = due_mono;
	/* else the sweep finds it, at most 5 s late */
}

static void log_end(const react_job *j, int state, bool applied)
{
	bool ok = state == MODEL_EVENT_DELIVERED;
	dbcron__log(ok ? LOG_INFO : LOG_WARN,
		    j->out == REACT_HANDBACK ? "event.handback" : "event.delivery",
		    LOG_INT("event", j->ev.id), LOG_STR("job", j->ev.job_name),
		    LOG_STR("target", j->ev.target), LOG_INT("attempt", j->ev.attempts),
		    LOG_STR("state", model_event_state_name(state)),
		    LOG_STR("error", ok ? NULL : j->why), LOG_INT("fenced", !applied));
}

/* Ends written per transaction. */
#define END_BATCH 64

/* j's end as the outbox row takes it. */
static void end_of(const react_job *j, store_event_end *e)
{
	memset(e, 0, sizeof(*e));
	e->ev = &j->ev;
	e->next_at = -1;
	e->state = MODEL_EVENT_FAILED;
	if (j->out == REACT_DELIVERED) {
		e->state = MODEL_EVENT_DELIVERED;
	} else if (j->out == REACT_HANDBACK) {
		e->state = MODEL_EVENT_PENDING; /* due now, for any node */
	} else if (j->out == REACT_RETRY && j->ev.attempts < REACT_MAX_ATTEMPTS) {
		e->state = MODEL_EVENT_PENDING;
		e->retry_in_ms = backoff_ms(j->ev.attempts);
	}
	e->error = e->state == MODEL_EVENT_DELIVERED ? NULL : j->why;
}

/* The ends not yet written, the oldest first, a transaction per batch
 * (one commit for many deliveries); a batch that fails stays, first. */
static int write_ends(react_deliverer *d, store *s, dbcron_err *err)
{
	store_event_end ends[END_BATCH];
	pthread_mutex_lock(&d->mu);
	react_list_move(&d->unwritten, &d->done);
	pthread_mutex_unlock(&d->mu);
	while (d->unwritten.head) {
		size_t k = 0;
		for (react_job *j = d->unwritten.head; j && k < END_BATCH; j = j->next)
			end_of(j, &ends[k++]);
		int rc = store_events_finish(s, d->node_id, ends, k, err);
		if (rc)
			return rc;
		/* the database's now was read before this: its retry times
		 * have passed by then on this clock */
		int64_t mono = dbcron__mono_ms();
		for (size_t i = 0; i < k; i++) {
			react_job *j = react_list_pop(&d->unwritten);
			if (ends[i].retry_in_ms > 0 && ends[i].applied)
				note_due(d, mono + ends[i].retry_in_ms + DUE_SLACK_MS);
			log_end(j, ends[i].state, ends[i].applied);
			react_job_free(j);
			d->out--;
		}
	}
	return DBCRON_OK;
}

/* ---- claiming ---- */

typedef struct claimed {
	react_list jobs;
	bool oom;
} claimed;

static int keep_event(void *ctx, const store_event *ev)
{
	claimed *c = ctx;
	react_job *j = dbcron__calloc(1, sizeof(*j));
	if (!j)
		goto out_oom;
	j->ev = *ev;
	j->ev.job_name = dbcron__strdup(ev->job_name ? ev->job_name : "");
	j->ev.target = dbcron__strdup(ev->target ? ev->target : "");
	j->ev.claim_token = dbcron__strdup(ev->claim_token ? ev->claim_token : "");
	j->ev.last_error = j->ev.node = NULL;
	j->in_fd = -1;
	if (!j->ev.job_name || !j->ev.target || !j->ev.claim_token) {
		react_job_free(j);
		goto out_oom;
	}
	react_list_push(&c->jobs, j);
	return 0;
out_oom:
	c->oom = true;
	return 1;
}

/* An exec: target runs as its job's --user and --group (docs/reactions.md):
 * read here, on the db thread, for the delivery thread.  A job deleted
 * since fails the event (no account to run it as, and never the node's
 * instead); a store error leaves it for a retry.  0 when j is ready. */
static int exec_account(store *s, react_job *j)
{
	dbcron_job job;
	dbcron_err e = {0};
	dbcron_job_init(&job);
	int rc = store_job_get(s, j->ev.job_name, &job, &e);
	if (rc) {
		j->out = rc == DBCRON_ENOTFOUND ? REACT_FAILED : REACT_RETRY;
		snprintf(j->why, sizeof(j->why), "%.400s%s", e.msg,
			 rc == DBCRON_ENOTFOUND ? ": no user to run the program as" : "");
		dbcron_job_clear(&job);
		return -1;
	}
	j->run_user = job.user, job.user = NULL;
	j->run_group = job.group, job.group = NULL;
	dbcron_job_clear(&job);
	return 0;
}

/* What was claimed: job:NAME done here, the others handed over. */
static void take_claimed(react_deliverer *d, store *s, react_list *jobs)
{
	react_list hand = {0};
	for (react_job *j; (j = react_list_pop(jobs));) {
		dbcron_err e = {0};
		model_target_kind kind = 0;
		d->out++;
		j->out = REACT_FAILED;
		if (model_target_check(j->ev.target, &kind, &e)) {
			snprintf(j->why, sizeof(j->why), "%s", e.msg);
		} else if ((j->kind = (int)kind) == MODEL_TARGET_JOB) {
			j->out = react_trigger(s, &j->ev, j->why, sizeof(j->why));
		} else if (kind == MODEL_TARGET_EXEC && exec_account(s, j) != 0) {
			/* j->out and j->why say why */
		} else if (!(j->body = react_event_body(s, &j->ev, d->node_id))) {
			j->out = REACT_RETRY;
			snprintf(j->why, sizeof(j->why), "out of memory building the event");
		} else {
			react_list_push(&hand, j);
			continue;
		}
		react_list_push(&d->unwritten, j);
	}
	if (!hand.head)
		return;
	pthread_mutex_lock(&d->mu);
	react_list_move(&d->todo, &hand);
	pthread_mutex_unlock(&d->mu);
	react_wake(d);
}

static void jobs_free(react_list *l)
{
	for (react_job *j; (j = react_list_pop(l));)
		react_job_free(j);
}

/* A claim of up to the room left (token in doubt first).  Anything that
 * goes wrong keeps the token: read back at the next step, its events are
 * taken then, so none is stranded under this live node. */
static int claim(react_deliverer *d, store *s, int64_t now, dbcron_err *err)
{
	claimed c = {0};
	int rc;
	if (d->doubt[0]) {
		rc = store_events_claimed(s, d->doubt, keep_event, &c, err);
		if (!rc && !c.oom) {
			d->doubt[0] = '\0';
			take_claimed(d, s, &c.jobs);
		}
		jobs_free(&c.jobs);
		return rc ? rc : c.oom ? dbcron_err_set(err, DBCRON_ENOMEM, "out of memory") : 0;
	}
	long limit = REACT_MAX_OUT - (long)d->out;
	if (limit > CLAIM_BATCH)
		limit = CLAIM_BATCH;
	char token[33];
	random_token(token);
	rc = store_events_claim(s, d->node_id, token, limit, keep_event, &c, err);
	if (rc || c.oom) {
		snprintf(d->doubt, sizeof(d->doubt), "%s", token);
		jobs_free(&c.jobs);
		return rc ? rc : dbcron_err_set(err, DBCRON_ENOMEM, "out of memory");
	}
	size_t got = 0;
	for (react_job *j = c.jobs.head; j; j = j->next)
		got++;
	take_claimed(d, s, &c.jobs);
	/* a full batch: more may wait */
	d->claim_at = got >= (size_t)limit ? now : INT64_MAX;
	size_t k = 0;
	for (size_t i = 0; i < d->ndues; i++)
		if (d->dues[i] > now)
			d->dues[k++] = d->dues[i];
	d->ndues = k;
	d->sweep_at = now + SWEEP_MS;
	return DBCRON_OK;
}

/*
 * Overdue (issue 26 item 1) is checked at the sweep, every 5 s on every
 * node, rather than under the maintenance lease: the lease's pass comes
 * once a minute (too coarse for a silence of seconds) and costs a lock
 * round trip, while the sweep is already this node's periodic write on
 * the db thread, and its claim right after delivers what the check
 * raised.  Several nodes checking at once is harmless: the event's
 * UNIQUE(run_id, kind, target), with the silent period as run_id, lets
 * one insert win (store_overdue_raise), and the check is one indexed
 * query for all jobs: it reads only the jobs with a silence limit
 * (jobs_overdue), since a scan of every job, at 100,000 of them, outlived
 * a loaded MariaDB's read timeout and ran on abandoned on the server
 * (issue 30 item 2).  A failure is logged and tried at the next sweep.
 */
static void raise_overdue(react_deliverer *d, store *s)
{
	dbcron_err e = {0};
	size_t raised = 0;
	if (store_overdue_raise(s, &raised, &e))
		dbcron__log(LOG_WARN, "event.overdue_failed", LOG_STR("node", d->node_id),
			    LOG_STR("error", e.msg));
	else if (raised)
		dbcron__log(LOG_INFO, "event.overdue", LOG_STR("node", d->node_id),
			    LOG_UINT("events", raised));
}

static int64_t next_claim(const react_deliverer *d)
{
	int64_t t = d->claim_at < d->sweep_at ? d->claim_at : d->sweep_at;
	for (size_t i = 0; i < d->ndues; i++)
		if (d->dues[i] < t)
			t = d->dues[i];
	return d->doubt[0] ? 0 : t;
}

int react_step(react_deliverer *d, store *s, bool written, int64_t *wake_mono,
	       dbcron_err *err)
{
	int64_t now = dbcron__mono_ms();
	int rc;
	if (written)
		d->claim_at = now;
	if ((rc = write_ends(d, s, err)))
		return rc;
	/* a claim is a write transaction: a batch's worth of room at least
	 * (the results of the ones out make room soon) */
	bool room = REACT_MAX_OUT - d->out >= CLAIM_BATCH;
	if (next_claim(d) <= now && room) {
		if (d->sweep_at <= now)
			raise_overdue(d, s);
		if ((rc = claim(d, s, now, err)))
			return rc;
		/* the job: targets it ended */
		if ((rc = write_ends(d, s, err)))
			return rc;
	}
	/* full: the delivery thread's results wake us (the node's kick) */
	int64_t t = next_claim(d);
	if (REACT_MAX_OUT - d->out >= CLAIM_BATCH && t < *wake_mono)
		*wake_mono = t;
	return DBCRON_OK;
}

void react_finish(react_deliverer *d, store *s)
{
	if (!d)
		return;
	/* the thread is joined: todo and done are ours alone now */
	for (react_job *j; (j = react_list_pop(&d->todo));) {
		j->out = REACT_HANDBACK;
		snprintf(j->why, sizeof(j->why), "not started: the node stopped");
		react_list_push(&d->done, j);
	}
	size_t left = d->out;
	dbcron_err e = {0};
	if (s && write_ends(d, s, &e))
		dbcron__log(LOG_WARN, "event.handback_failed", LOG_STR("node", d->node_id),
			    LOG_STR("error", e.msg),
			    LOG_STR("msg", "the claims lapse with the node's lease instead"));
	else if (left)
		dbcron__log(LOG_INFO, "event.stop", LOG_STR("node", d->node_id),
			    LOG_UINT("written", left));
	jobs_free(&d->unwritten);
	jobs_free(&d->done);
	react__free(d);
}
