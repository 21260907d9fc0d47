/*
 * The in-flight table: one `fire` per claimed run the node holds, the
 * per-job state those fires share (overlap bookkeeping, the slow-pool ring,
 * the job snapshot), and the intrusive lists that carry fires between the
 * threads.  Plain data structures: nothing here locks, sleeps or touches
 * the database.  The node guards all of it with its one mutex (n->mu), and
 * every function below is called with that mutex held (or single-threaded).
 *
 * A fire's life is its phase; only fire_set_phase() changes it, and every
 * change is checked against the edges below (an edge not listed is a bug:
 * it is logged and the process aborts, an assert never compiled out).
 *
 *                              +----> STARTING ---------+ fenced
 *                              |     (at-most-once)     | write
 *                              |                        v
 *   NEW --> CLAIMED --due--> start ---> STARTED <---> RUNNING
 *              ^             or hold       |             |
 *              |             | |  ^        +------+------+
 *              |    job busy | v  | a run ends    | job ended
 *              |             | HELD               v
 *              |             +--skip, misfire--> FINISHED <--> WRITING
 *              |                                                  |
 *              +-- pool full (STARTED, RUNNING)       WRITTEN <---+
 *
 *   CLAIMED, HELD, STARTING --handed back, fenced, refused--> RELEASED
 *   (WRITTEN and RELEASED fires are freed at once.)
 *
 *   NEW      -> CLAIMED             claimed and pushed on the timer heap
 *   CLAIMED  -> HELD                due while a run of its job goes on
 *   CLAIMED  -> STARTING            due, at-most-once: RUNNING is written,
 *                                   fenced, before the job starts
 *   CLAIMED  -> STARTED             due and handed to a pool; RUNNING goes
 *                                   out with the next batch
 *   CLAIMED  -> FINISHED            due but not run: skipped, misfired,
 *                                   out of memory
 *   CLAIMED  -> RELEASED            handed back at shutdown, dropped when
 *                                   the node learns it was fenced
 *   HELD     -> as CLAIMED, and HELD again while the job is still busy
 *   HELD     -> CLAIMED             its turn came while the lease was in
 *                                   doubt: back on the heap, to wait there
 *   STARTING -> RUNNING | RELEASED  the fenced write went through | not
 *   STARTING -> FINISHED            its job was paused or deleted first
 *   STARTED  -> RUNNING             the db thread took its start in a batch
 *   STARTED, RUNNING -> FINISHED    the job ended
 *   STARTED, RUNNING -> CLAIMED     the pool was full: on the heap again
 *   RUNNING  -> STARTED             the batch with its start failed
 *   FINISHED -> WRITING             the db thread took its end in a batch
 *   WRITING  -> FINISHED | WRITTEN  the batch failed | was applied (a
 *                                   write refused by the fence is WRITTEN
 *                                   too: the run is no longer ours)
 *
 * List membership follows the phase, so no flag says where a fire is:
 * CLAIMED = in the timer heap (or being moved by its owner), HELD = in its
 * job's `held` list, STARTING = in the node's sync list, STARTED and
 * FINISHED = in the node's pending-write list, WRITING = in the db thread's
 * batch.  STARTING, STARTED and RUNNING fires are also on their job's
 * running list.
 *
 * Job snapshots (ownership rule): a fire holds one reference to the
 * snapshot of its job it was claimed with, from fire_take() to fire_free();
 * a job's state points at its newest snapshot without owning it.  The
 * claim reuses that snapshot while the job row it reads is unchanged and
 * makes a new one when the job was edited; fires already in flight keep
 * theirs.  A snapshot is freed with its last fire, so the node holds at
 * most one copy of each job version that still has a fire in flight.
 */
#ifndef DBCRON_SCHED_INFLIGHT_H
#define DBCRON_SCHED_INFLIGHT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dbcron/job.h"
#include "exec/exec.h"
#include "sched/timer.h"
#include "store/store.h"

/* Values are not stored anywhere; the order is the diagram's, top down. */
typedef enum fire_phase {
	FIRE_NEW = 0,  /* built by fire_take, not yet in the heap */
	FIRE_CLAIMED,  /* waiting for its instant in the timer heap */
	FIRE_HELD,     /* due, waiting for a run of its job to end */
	FIRE_STARTING, /* at-most-once: waiting for its fenced RUNNING write */
	FIRE_STARTED,  /* handed to a pool; RUNNING not yet written */
	FIRE_RUNNING,  /* handed to a pool; RUNNING written or being written */
	FIRE_FINISHED, /* ended; its final state waits for the next batch */
	FIRE_WRITING,  /* its final state is in the batch being written */
	FIRE_WRITTEN,  /* final state applied or refused by the fence */
	FIRE_RELEASED, /* never started: handed back, or no longer ours */
	FIRE_NPHASES
} fire_phase;

/* Why a running fire was stopped on purpose; static, never freed. */
typedef struct fire_cancel {
	dbcron_run_state state; /* recorded instead of what the run returned */
	const char *why;        /* recorded instead of the run's own error */
	bool no_retry;          /* a replaced run gets no new attempt */
} fire_cancel;

extern const fire_cancel fire_cancel_replaced;
extern const fire_cancel fire_cancel_shutdown;
/* dbcron runs cancel: CANCELLED whatever the run returns, never retried */
extern const fire_cancel fire_cancel_user;

typedef struct job_state job_state;

/* One version of a job's row, shared by the fires claimed with it. */
typedef struct job_snap {
	dbcron_job job;
	unsigned refs;  /* fires holding it */
	job_state *js; /* whose snapshot; job states outlive snapshots */
} job_snap;

typedef struct fire fire;

/* A FIFO of fires linked through fire.prev/next; a fire is on at most one
 * such list at a time (which one follows from its phase). */
typedef struct fire_list {
	fire *head, *tail;
} fire_list;

struct fire {
	timer_node tn; /* first: the heap holds &f->tn */
	fire_phase phase; /* only through fire_set_phase() */
	struct dbcron_node *node;
	job_state *js;
	job_snap *snap;   /* the job as claimed; one reference */
	dbcron_run run;   /* owned copy of the claimed row */
	bool slow;        /* which pool it was handed to */
	bool launched;    /* mu: its worker passed the last lease check and
			   * runs the job (a queued one has not started) */
	uint64_t gen;     /* the node's lease generation when claimed */
	/* --start-jitter: a random delay in [0, start_jitter_ms) chosen when
	 * the first attempt is claimed; it starts at fire_start_at().  The
	 * run's fire_at and due_at stay the instant; lateness and the misfire
	 * threshold are counted from due_at + delay_ms (the delay was asked
	 * for, it is not late). */
	int64_t delay_ms;
	/* Database-clock times; -1 until known.  started_db is written by the
	 * worker as it starts the job, without the mutex. */
	atomic_llong started_db;
	int64_t finished_db;
	bool start_counted; /* db thread: its lateness is in the node's stats */
	/* The outcome, set when the fire becomes FINISHED. */
	dbcron_run_state end_state;
	const char *end_why; /* static text recorded instead of res.error */
	bool no_retry;
	const fire_cancel *cancel_why; /* set with cancel.requested */
	exec_cancel cancel;
	exec_result res;
	fire *prev, *next; /* the fire_list it is on */
	fire *run_next;    /* its job's running list */
	/* db thread: a write of it failed in a way that may have committed
	 * (a lost COMMIT reply), so a later refusal may be our own write */
	bool write_doubt;
};

/* When the fire may start: its due instant plus its start jitter. */
static inline int64_t fire_start_at(const fire *f)
{
	return f->run.due_at + f->delay_ms;
}

#define INFLIGHT_SLOW_RING 11 /* slow-run times kept per job */

/* Per job, created at its first claim and kept while anything of the job
 * is in flight or its slow-run ring still counts (the fires point at it);
 * inflight_jobs_sweep() frees the rest, so a node's memory follows the jobs
 * it is running, not every job it ever ran. */
struct job_state {
	int64_t job_id;
	unsigned nfires; /* its fires in flight: made and not yet freed */
	int running; /* fires on running_list */
	fire *running_list;
	fire_list held; /* HELD fires, in the order they fell due */
	int64_t slow_at[INFLIGHT_SLOW_RING]; /* ring of slow-run end times */
	unsigned slow_n;
	job_snap *snap; /* newest snapshot, NULL when none is in flight; not
			 * a reference */
	unsigned nsnaps; /* snapshots of this job alive (this and older) */
	/* JOB_OK, or paused / deleted since its fires were claimed (the db
	 * thread learns it from the jobs generation): none of them starts. */
	enum { JOB_OK, JOB_PAUSED, JOB_DELETED } blocked;
};

/* Job states by id: open addressing over pointers, so states never move. */
typedef struct inflight_jobs {
	job_state **slots;
	size_t nslots, used;
} inflight_jobs;

/* ---- phases ---- */
const char *fire_phase_name(fire_phase p);
/* Whether the diagram has an edge from -> to. */
bool fire_phase_ok(fire_phase from, fire_phase to);
/* Move f to `to`.  An edge not in the diagram calls the bad-phase hook and
 * leaves the phase as it was; the default hook logs and aborts. */
void fire_set_phase(fire *f, fire_phase to);
typedef void (*fire_bad_phase_fn)(const fire *f, fire_phase to);
/* Tests only: replace the hook (NULL restores the default). */
void fire_set_bad_phase_hook(fire_bad_phase_fn fn);

/* ---- fires ---- */
/* A NEW fire for claimed run c of js's job, for a claim that is done with
 * c: the fire takes the run's strings (c's run is left empty) and a
 * reference to the job's snapshot: reused while it stands for job (c->job,
 * writable), else a new one, made of job's own fields when last (no later
 * run of the claim has this job; job is left empty) or of a copy.  The
 * claim's hot path (docs/benchmarks.md "The node's CPU per execution").
 * NULL when out of memory; c is the caller's to clear either way. */
fire *fire_take(struct dbcron_node *n, job_state *js, store_claimed *c, dbcron_job *job,
		bool last);
/* Free a fire that is NEW, WRITTEN or RELEASED; drops its snapshot
 * reference.  Any other phase is a bug (the bad-phase hook). */
void fire_free(fire *f);
/* Free whatever phase it is in (the node's teardown). */
void fire_discard(fire *f);

/* ---- lists ---- */
void fire_list_push(fire_list *l, fire *f);
fire *fire_list_pop(fire_list *l);
void fire_list_unlink(fire_list *l, fire *f);
/* Empties l and returns its old head; the fires stay linked by next. */
fire *fire_list_take(fire_list *l);
static inline bool fire_list_empty(const fire_list *l) { return !l->head; }

/* ---- job states ---- */
/* The job's state, created on first use; NULL when out of memory. */
job_state *inflight_job_get(inflight_jobs *t, int64_t job_id);
/* The job's state, or NULL when it has none (nothing is created). */
job_state *inflight_job_find(const inflight_jobs *t, int64_t job_id);
void inflight_jobs_free(inflight_jobs *t);
/* Free the states with no fire, no snapshot and no slow run ended within
 * keep_ms of now_mono, rebuilding the table around the rest.  Only on the
 * thread that calls inflight_job_get(), with the node's mutex held.
 * Returns how many were freed (0 also when out of memory: nothing changes). */
size_t inflight_jobs_sweep(inflight_jobs *t, int64_t now_mono, int64_t keep_ms);
void inflight_running_add(job_state *js, fire *f);
void inflight_running_remove(job_state *js, fire *f);

#endif
