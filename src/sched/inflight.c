/*
 * The in-flight table (see inflight.h for the phase diagram and the
 * snapshot ownership rule).  Owns the phase checker, fires' memory, job
 * snapshots and job states.  Keeps: a phase changes only along an edge of
 * the diagram; a snapshot lives exactly as long as its last fire; job states
 * never move once made (fires point at them).  No locking here: the
 * caller holds the node's mutex.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/random.h>

#include "core/alloc.h"
#include "core/timeutil.h"
#include "core/log.h"
#include "sched/inflight.h"

const fire_cancel fire_cancel_replaced = {
	DBCRON_RUN_FAILED, "replaced by a newer fire", true,
};
const fire_cancel fire_cancel_user = {
	DBCRON_RUN_CANCELLED, "cancelled", true,
};
const fire_cancel fire_cancel_shutdown = {
	DBCRON_RUN_ABANDONED, "node shut down before the run ended", false,
};

/* ---- phases -------------------------------------------------------- */

#define EDGE(a, b) [a][b] = true
/* The edges of the diagram in inflight.h, one for one. */
static const bool edges[FIRE_NPHASES][FIRE_NPHASES] = {
	EDGE(FIRE_NEW, FIRE_CLAIMED),
	EDGE(FIRE_CLAIMED, FIRE_HELD),
	EDGE(FIRE_CLAIMED, FIRE_STARTING),
	EDGE(FIRE_CLAIMED, FIRE_STARTED),
	EDGE(FIRE_CLAIMED, FIRE_FINISHED),
	EDGE(FIRE_CLAIMED, FIRE_RELEASED),
	EDGE(FIRE_HELD, FIRE_HELD),
	EDGE(FIRE_HELD, FIRE_STARTING),
	EDGE(FIRE_HELD, FIRE_STARTED),
	EDGE(FIRE_HELD, FIRE_FINISHED),
	EDGE(FIRE_HELD, FIRE_RELEASED),
	EDGE(FIRE_HELD, FIRE_CLAIMED),
	EDGE(FIRE_STARTING, FIRE_RUNNING),
	EDGE(FIRE_STARTING, FIRE_RELEASED),
	EDGE(FIRE_STARTING, FIRE_FINISHED),
	EDGE(FIRE_STARTED, FIRE_RUNNING),
	EDGE(FIRE_STARTED, FIRE_FINISHED),
	EDGE(FIRE_STARTED, FIRE_CLAIMED),
	EDGE(FIRE_RUNNING, FIRE_STARTED),
	EDGE(FIRE_RUNNING, FIRE_FINISHED),
	EDGE(FIRE_RUNNING, FIRE_CLAIMED),
	EDGE(FIRE_FINISHED, FIRE_WRITING),
	EDGE(FIRE_WRITING, FIRE_FINISHED),
	EDGE(FIRE_WRITING, FIRE_WRITTEN),
};
#undef EDGE

static const char *const phase_names[FIRE_NPHASES] = {
	"new", "claimed", "held", "starting", "started", "running",
	"finished", "writing", "written", "released",
};

const char *fire_phase_name(fire_phase p)
{
	return (unsigned)p < FIRE_NPHASES ? phase_names[p] : "invalid";
}

bool fire_phase_ok(fire_phase from, fire_phase to)
{
	return (unsigned)from < FIRE_NPHASES && (unsigned)to < FIRE_NPHASES &&
	       edges[from][to];
}

static void bad_phase_abort(const fire *f, fire_phase to)
{
	dbcron__log(LOG_ERROR, "node.bug", LOG_STR("job", f->run.job_name ? f->run.job_name : ""),
		    LOG_INT("run", f->run.id), LOG_STR("from", fire_phase_name(f->phase)),
		    LOG_STR("to", fire_phase_name(to)),
		    LOG_STR("msg", "fire phase change not in the diagram"));
	abort();
}

/* Set once by a test before any node runs; never changed concurrently. */
static fire_bad_phase_fn bad_phase = bad_phase_abort;

void fire_set_bad_phase_hook(fire_bad_phase_fn fn)
{
	bad_phase = fn ? fn : bad_phase_abort;
}

void fire_set_phase(fire *f, fire_phase to)
{
	if (!fire_phase_ok(f->phase, to)) {
		bad_phase(f, to);
		return;
	}
	f->phase = to;
}

/* ---- job snapshots -------------------------------------------------- */

static bool str_eq(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

/*
 * Whether a snapshot still stands for the job row a claim read.  Every
 * field a fire uses is compared (next_fire_at and paused move with the
 * schedule and are not the fire's business); updated_ms also catches a
 * field added to dbcron_job later and not listed here.
 */
static bool snap_same(const dbcron_job *a, const dbcron_job *b)
{
	if (a->id != b->id || a->updated_ms != b->updated_ms ||
	    a->kind != b->kind || a->interval_ms != b->interval_ms ||
	    a->anchor_ms != b->anchor_ms || a->at_ms != b->at_ms ||
	    a->misfire != b->misfire || a->max_catchup != b->max_catchup ||
	    a->misfire_threshold_ms != b->misfire_threshold_ms ||
	    a->overlap != b->overlap || a->node_loss != b->node_loss ||
	    a->max_retries != b->max_retries ||
	    a->retry_base_ms != b->retry_base_ms ||
	    a->retry_cap_ms != b->retry_cap_ms ||
	    a->retry_jitter != b->retry_jitter || a->start_jitter_ms != b->start_jitter_ms ||
	    a->timeout_ms != b->timeout_ms || a->executor != b->executor ||
	    a->argc != b->argc || a->created_ms != b->created_ms)
		return false;
	if (!str_eq(a->name, b->name) || !str_eq(a->spec, b->spec) ||
	    !str_eq(a->tz, b->tz) || !str_eq(a->handler, b->handler) ||
	    !str_eq(a->arg, b->arg))
		return false;
	if (!a->argv != !b->argv)
		return false;
	for (int i = 0; a->argv && i < a->argc; i++)
		if (!str_eq(a->argv[i], b->argv[i]))
			return false;
	return true;
}

/* A reference to the snapshot of js's job as `job` shows it.  take: a new
 * snapshot may have job's fields instead of a copy of them (job is left
 * empty then). */
static job_snap *snap_get(job_state *js, dbcron_job *job, bool take)
{
	if (js->snap && snap_same(&js->snap->job, job)) {
		js->snap->refs++;
		return js->snap;
	}
	job_snap *s = dbcron__calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	dbcron_job_init(&s->job);
	if (take) {
		s->job = *job;
		dbcron_job_init(job);
	} else if (dbcron_job_copy(&s->job, job)) {
		dbcron__free(s);
		return NULL;
	}
	s->refs = 1;
	s->js = js;
	js->snap = s; /* older snapshots stay with the fires holding them */
	js->nsnaps++;
	return s;
}

static void snap_put(job_snap *s)
{
	if (!s || --s->refs)
		return;
	if (s->js->snap == s)
		s->js->snap = NULL;
	s->js->nsnaps--;
	dbcron_job_clear(&s->job);
	dbcron__free(s);
}

/* ---- fires ----------------------------------------------------------- */

/* --start-jitter: the first attempt of a fire waits a random time in
 * [0, start_jitter_ms) (a retry has its backoff).  getrandom, so that
 * nodes started together do not share a sequence. */
static int64_t start_delay(const dbcron_job *job, const dbcron_run *run)
{
	uint64_t r = 0;
	if (job->start_jitter_ms <= 0 || run->attempt != 1)
		return 0;
	if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r))
		r = (uint64_t)dbcron__mono_us() * 0x9E3779B97F4A7C15ULL;
	return (int64_t)(r % (uint64_t)job->start_jitter_ms);
}

fire *fire_take(struct dbcron_node *n, job_state *js, store_claimed *c, dbcron_job *job,
		bool last)
{
	fire *f = dbcron__calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->phase = FIRE_NEW;
	f->node = n;
	f->js = js;
	f->tn.idx = SIZE_MAX;
	f->tn.prio = job->priority;   /* same due: higher first */
	f->tn.tie = c->run.fire_at;   /* then older instant first */
	f->run = c->run;              /* the run's strings, taken */
	f->run.error = f->run.output = NULL;
	dbcron__free(c->run.error);  /* a claimed run has none: nothing lost */
	dbcron__free(c->run.output);
	memset(&c->run, 0, sizeof(c->run));
	atomic_init(&f->started_db, -1);
	f->finished_db = -1;
	f->snap = snap_get(js, job, last);
	if (!f->snap) {
		dbcron_run_clear(&f->run);
		dbcron__free(f);
		return NULL;
	}
	f->delay_ms = start_delay(&f->snap->job, &f->run);
	js->nfires++;
	return f;
}

void fire_discard(fire *f)
{
	if (!f)
		return;
	if (f->js)
		f->js->nfires--;
	snap_put(f->snap);
	dbcron_run_clear(&f->run);
	exec_result_clear(&f->res);
	dbcron__free(f);
}

void fire_free(fire *f)
{
	if (!f)
		return;
	if (f->phase != FIRE_NEW && f->phase != FIRE_WRITTEN &&
	    f->phase != FIRE_RELEASED) {
		/* not reached unless a caller frees a fire still in use */
		bad_phase(f, FIRE_NPHASES);
		return;
	}
	fire_discard(f);
}

/* ---- lists ------------------------------------------------------------ */

void fire_list_push(fire_list *l, fire *f)
{
	f->next = NULL;
	f->prev = l->tail;
	if (l->tail)
		l->tail->next = f;
	else
		l->head = f;
	l->tail = f;
}

void fire_list_unlink(fire_list *l, fire *f)
{
	if (f->prev)
		f->prev->next = f->next;
	else
		l->head = f->next;
	if (f->next)
		f->next->prev = f->prev;
	else
		l->tail = f->prev;
	f->prev = f->next = NULL;
}

fire *fire_list_pop(fire_list *l)
{
	fire *f = l->head;
	if (f)
		fire_list_unlink(l, f);
	return f;
}

fire *fire_list_take(fire_list *l)
{
	fire *h = l->head;
	l->head = l->tail = NULL;
	return h;
}

/* ---- job states --------------------------------------------------------- */

static size_t js_slot(int64_t id, size_t n)
{
	return (size_t)(((uint64_t)id * 0x9E3779B97F4A7C15ull) >> 20) & (n - 1);
}

job_state *inflight_job_get(inflight_jobs *t, int64_t job_id)
{
	if (t->used * 2 >= t->nslots) {
		size_t ns = t->nslots ? t->nslots * 2 : 256;
		job_state **a = dbcron__calloc(ns, sizeof(*a));
		if (!a)
			return NULL;
		for (size_t i = 0; i < t->nslots; i++) {
			if (!t->slots[i])
				continue;
			size_t j = js_slot(t->slots[i]->job_id, ns);
			while (a[j])
				j = (j + 1) & (ns - 1);
			a[j] = t->slots[i];
		}
		dbcron__free(t->slots);
		t->slots = a;
		t->nslots = ns;
	}
	size_t i = js_slot(job_id, t->nslots);
	while (t->slots[i] && t->slots[i]->job_id != job_id)
		i = (i + 1) & (t->nslots - 1);
	if (!t->slots[i]) {
		job_state *js = dbcron__calloc(1, sizeof(*js));
		if (!js)
			return NULL;
		js->job_id = job_id;
		t->slots[i] = js;
		t->used++;
	}
	return t->slots[i];
}

job_state *inflight_job_find(const inflight_jobs *t, int64_t job_id)
{
	if (!t->nslots)
		return NULL;
	size_t i = js_slot(job_id, t->nslots);
	while (t->slots[i] && t->slots[i]->job_id != job_id)
		i = (i + 1) & (t->nslots - 1);
	return t->slots[i];
}

static bool js_idle(const job_state *js, int64_t now_mono, int64_t keep_ms)
{
	if (js->running || js->running_list || js->nsnaps || !fire_list_empty(&js->held))
		return false;
	for (unsigned i = 0; i < INFLIGHT_SLOW_RING; i++)
		if (js->slow_at[i] && now_mono - js->slow_at[i] <= keep_ms)
			return false;
	return true;
}

size_t inflight_jobs_sweep(inflight_jobs *t, int64_t now_mono, int64_t keep_ms)
{
	size_t live = 0;
	for (size_t i = 0; i < t->nslots; i++)
		if (t->slots[i] && !js_idle(t->slots[i], now_mono, keep_ms))
			live++;
	if (live == t->used)
		return 0;
	/* rebuilt rather than deleted in place: linear probing would need
	 * backward-shift deletion, and a sweep is rare */
	size_t ns = 256;
	while (ns < live * 4)
		ns *= 2;
	job_state **a = dbcron__calloc(ns, sizeof(*a));
	if (!a)
		return 0;
	size_t freed = 0;
	for (size_t i = 0; i < t->nslots; i++) {
		job_state *js = t->slots[i];
		if (!js)
			continue;
		if (js_idle(js, now_mono, keep_ms)) {
			dbcron__free(js);
			freed++;
			continue;
		}
		size_t j = js_slot(js->job_id, ns);
		while (a[j])
			j = (j + 1) & (ns - 1);
		a[j] = js;
	}
	dbcron__free(t->slots);
	t->slots = a;
	t->nslots = ns;
	t->used = live;
	return freed;
}

/* Only after every fire is gone (the fires point into the states). */
void inflight_jobs_free(inflight_jobs *t)
{
	for (size_t i = 0; i < t->nslots; i++)
		dbcron__free(t->slots[i]);
	dbcron__free(t->slots);
	t->slots = NULL;
	t->nslots = t->used = 0;
}

void inflight_running_add(job_state *js, fire *f)
{
	f->run_next = js->running_list;
	js->running_list = f;
	js->running++;
}

void inflight_running_remove(job_state *js, fire *f)
{
	for (fire **pp = &js->running_list; *pp; pp = &(*pp)->run_next)
		if (*pp == f) {
			*pp = f->run_next;
			break;
		}
	f->run_next = NULL;
	js->running--;
}
