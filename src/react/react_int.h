/*
 * Inside the react module: the deliverer shared by the db thread's half
 * (outbox.c) and the delivery thread (deliver.c), one delivery (react_job)
 * as it passes between them, and the ways out (outlets.c).
 *
 * Ownership: a react_job is made by the db thread at a claim and put on
 * todo; the delivery thread takes it off todo, owns it while it delivers
 * and puts it on done; the db thread takes it off done, writes its end
 * and frees it.  todo, done and the stop fields are under mu; the fields
 * marked "db thread" are that thread's alone, those marked "delivery
 * thread" the delivery thread's alone.
 */
#ifndef DBCRON_REACT_REACT_INT_H
#define DBCRON_REACT_REACT_INT_H

#include <pthread.h>
#include <stddef.h>
#include <sys/types.h>

#include "exec/proc.h"
#include "react/react.h"
#include "store/store.h"

/* Attempts before an event that keeps failing ends FAILED. */
#define REACT_MAX_ATTEMPTS 5
/* Deliveries handed to the delivery thread and not yet written: the
 * concurrent transfers and programs of one node. */
#define REACT_MAX_OUT 32
/* Retry due times this node remembers to claim at (more: the sweep). */
#define REACT_MAX_RETRY_DUES 64

typedef enum react_outcome {
	REACT_DELIVERED,
	REACT_RETRY,    /* may pass: connection, timeout, HTTP 5xx, exec failure */
	REACT_FAILED,   /* will not pass: HTTP 4xx, a job that is gone */
	REACT_HANDBACK, /* not finished: the node stops, pending again now */
} react_outcome;

typedef struct react_job {
	struct react_job *next;
	store_event ev; /* job_name, target, claim_token owned; the others NULL */
	int kind;       /* model_target_kind */
	char *body;     /* the event JSON (NULL for job:) */
	react_outcome out;
	char why[512];
	/* delivery thread */
	void *easy;         /* the transfer (CURL *) */
	void *hdrs;         /* its headers (struct curl_slist *) */
	/* exec: the job's --user and --group, copied by the db thread (NULL:
	 * the node's); the program runs as them (docs/reactions.md) */
	char *run_user, *run_group;
	proc prog;          /* the program (exec/proc.h) */
	pid_t pid;          /* its pid while it is ours to reap, 0 none */
	int in_fd;          /* its stdin while the body is written, -1 */
	size_t in_off;      /* bytes of body written */
	int64_t deadline;   /* mono ms: the program is killed then */
} react_job;

typedef struct react_list {
	react_job *head, *tail;
} react_list;

struct react_deliverer {
	/* set at start, read-only after */
	char *node_id;
	char *secret; /* NULL: no signature */
	size_t secret_len;
	void (*kick)(void *ctx);
	void *kick_ctx;
	const dbcron__log_sink *log;
	pthread_t thread;
	bool started;
	int wake[2]; /* the delivery thread's wake-up pipe (nonblocking) */

	pthread_mutex_t mu;
	react_list todo; /* mu: handed, not yet taken */
	react_list done; /* mu: delivered (or not), not yet written */
	bool stop;       /* mu */
	int64_t cut_at;  /* mu: mono ms past which work in progress is cut */

	/* db thread */
	size_t out;              /* jobs handed and not yet written */
	int64_t claim_at;        /* mono ms: the next claim (INT64_MAX none) */
	int64_t sweep_at;        /* mono ms: the next sweep */
	int64_t dues[REACT_MAX_RETRY_DUES]; /* mono ms of retries we scheduled */
	size_t ndues;
	char doubt[33];          /* a claim's token whose commit is in doubt */
	react_list unwritten;    /* ends that failed to write: first next time */
};

void react_list_push(react_list *l, react_job *j);
react_job *react_list_pop(react_list *l);
/* Appends all of src to dst; src is left empty. */
void react_list_move(react_list *dst, react_list *src);
void react_job_free(react_job *j);
/* Frees d, whose thread is joined (or never started). */
void react__free(react_deliverer *d);
/* Wakes the delivery thread (any thread; no lock needed). */
void react_wake(react_deliverer *d);

/* ---- outlets.c ---- */
/* job:NAME: a triggered run of that job (store_job_trigger); db thread. */
react_outcome react_trigger(store *s, const store_event *ev, char *buf, size_t len);
/* The event JSON (docs/reactions.md), owned by the caller; NULL when out
 * of memory.  Reads the run the event is about; db thread. */
char *react_event_body(store *s, const store_event *ev, const char *node_id);

/* The delivery thread's side: one multi handle for every webhook. */
typedef struct react_multi react_multi;
/* Starts j's POST on m (made, and libcurl loaded, on first use: *m NULL
 * before).  false: it could not start, j->out and j->why say why. */
bool react_http_start(react_multi **m, react_job *j, const char *secret, size_t secret_len);
/* Runs the transfers, waits up to wait_ms for one to progress, the wake
 * pipe wake_fd or one of the programs' stdin (jobs on execs) to take more;
 * the finished transfers are moved to out (j->out set). */
void react_http_run(react_multi *m, int wake_fd, react_list *execs, int wait_ms,
		    react_list *out);
/* A transfer in progress, NULL when none (m may be NULL). */
react_job *react_http_first(react_multi *m);
/* Cuts j's transfer (j->out left for the caller to set). */
void react_http_cut(react_multi *m, react_job *j);
void react_multi_free(react_multi *m);

/* exec:PATH [ARGS]: the program started (stdin a nonblocking pipe that
 * react_exec_poll fills with the body).  false: it could not start. */
bool react_exec_start(react_job *j);
/* Feeds the body, collects the program if it ended or kills it past its
 * 30 s; true when j is over (j->out set). */
bool react_exec_poll(react_job *j, int64_t now_mono);
/* Kills j's program and collects it (j->out left for the caller). */
void react_exec_cut(react_job *j);

#endif
