/*
 * One child process in a process group of its own: spawn, wait, stop.
 * Used by the shell executor and by `dbcron lock`; anything else that runs
 * a command should use it too, so that there is one place that knows how
 * to stop a process tree for good.
 *
 * The group does not outlive this process: each proc has a guard, a
 * second child of ours that never execs and stops the group (SIGTERM,
 * then SIGKILL after death_grace_ms) if we die without doing it, kill -9
 * included (proc.c says how and why).
 *
 * Contract, for every proc that proc_spawn() started: the caller ends with
 * proc_reap(), which always reaps the leader and the guard.  Until then
 * the leader's pid is the group id and stays ours (the leader is only
 * peeked at with WNOWAIT), so signalling the group can never hit an
 * unrelated process.  Nothing here calls waitpid(-1), and the caller must
 * not either.  Any thread may drive a proc; the one that spawned it may
 * exit before the reap.
 */
#ifndef DBCRON_EXEC_PROC_H
#define DBCRON_EXEC_PROC_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "dbcron/error.h"

#define PROC_DEFAULT_GRACE_MS 2000
/* Longest sleep between two looks at a cancel flag (exec.h promises 50). */
#define PROC_TICK_MS 50
/* After the leader's exit, how long proc_reap() keeps reading the pipe. */
#define PROC_DRAIN_MAX_MS 1000

/* Receives the child's output as it is read (stdout and stderr mixed). */
typedef void (*proc_sink)(void *ctx, const char *buf, size_t n);

typedef struct proc_opts {
	char *const *argv;  /* argv[0] looked up in PATH; never a shell */
	char *const *envp;  /* NULL: this process's environ */
	bool stdin_null;    /* stdin from /dev/null instead of ours */
	int stdin_fd;       /* > 2: stdin from this fd instead (a pipe's read
			     * end; the caller closes its copy after the
			     * spawn); otherwise as stdin_null says */
	proc_sink sink;     /* non-NULL: stdout and stderr into one pipe,
			     * fed to sink; NULL: both inherited */
	void *sink_ctx;
	/* Keep our signal mask and ignored signals (so `nohup dbcron lock`
	 * still means nohup for the command).  Otherwise the child starts
	 * with an empty mask and every disposition at its default, which is
	 * what a worker thread that blocks SIGTERM needs for its children. */
	bool inherit_signals;
	/* If this process dies while the command runs, its group gets
	 * SIGTERM (+SIGCONT) at once and SIGKILL this much later, or as soon
	 * as the leader has exited (<= 0: PROC_DEFAULT_GRACE_MS). */
	int64_t death_grace_ms;
	/* The PATH argv[0] is looked up in (the command's own, when its
	 * environment sets one); NULL: ours. */
	const char *path;
	/* set_ids: the command runs as uid, gid and the supplementary groups
	 * (setgroups, setgid, setuid in the child, each checked; needs root
	 * or CAP_SETUID and CAP_SETGID).  who names them in messages ("user
	 * 'nobody'"). */
	bool set_ids;
	uid_t uid;
	gid_t gid;
	const gid_t *groups;
	int ngroups;
	const char *who;
	/* The directory the command starts in, entered as its user; NULL:
	 * ours.  cwd_or_root: when it cannot be entered, "/" instead. */
	const char *cwd;
	bool cwd_or_root;
	bool set_umask; /* the command's umask is umask */
	mode_t umask;
	bool close_fds; /* the command gets fds 0-2 and no other */
	bool no_caps;   /* the command gets none of our capabilities */
} proc_opts;

struct proc_sup;

typedef struct proc {
	pid_t pid;           /* the leader; also the process group id */
	pid_t guard;         /* our other child, a member of the group that
			      * stops it if we die; -1 none */
	int out_fd;          /* our read end (non-blocking); -1 none or EOF */
	int pidfd;           /* -1: the kernel gave none, we tick instead */
	proc_sink sink;
	void *sink_ctx;
	bool exited;         /* the leader has exited (not reaped yet) */
	bool stopping;       /* proc_stop() was called */
	bool killed;         /* SIGKILL sent to the group */
	int64_t kill_at_ms;  /* monotonic; when the SIGKILL is due */
	struct proc_sup *sup; /* the supervisor that guards it (a close_fds
			       * run, proc.c), or NULL: guard is its own */
	int64_t grace_ms;    /* death_grace_ms, for a new supervisor */
	bool shared;         /* counted among the supervisors' runs */
} proc;

/*
 * Start o->argv in a new process group (pgid = its pid), looked up in our
 * PATH as posix_spawnp() and execvp() do, with its guard.  Every fd we
 * open is O_CLOEXEC from birth, so concurrent spawns on other threads
 * never inherit our pipe.  Returns once the command has exec'd or failed
 * to: on failure nothing is left to clean up (both children are reaped),
 * p->pid is -1 and err says "cannot execute 'x': No such file or
 * directory" (the exec errno comes back from the child, so there is no
 * exit status 127 to decode), "cannot run 'x' as user 'u' (uid 65534, gid
 * 65534): setgroups: Operation not permitted", "cannot run 'x' in '/d':
 * No such file or directory".  DBCRON_ENOTFOUND for a missing command or
 * directory, DBCRON_EINVAL for an empty argv, DBCRON_EIO otherwise.
 */
int proc_spawn(proc *p, const proc_opts *o, dbcron_err *err);

/*
 * Wait until the leader exits or the monotonic clock reaches until_ms,
 * reading output meanwhile and sending the SIGKILL a stop scheduled once
 * its grace is over.  May return early when a signal interrupts the wait
 * (the caller looks at its flags and calls again).  Returns true once the
 * leader has exited; if we had stopped the group, whatever is left of it
 * gets SIGKILL at that moment (a grandchild that ignored SIGTERM must not
 * outlive its leader).
 */
bool proc_wait_until(proc *p, int64_t until_ms);

/* Send sig to the whole group, and SIGCONT after it so that a stopped
 * member (Ctrl-Z, SIGTTIN) gets to handle it.  No-op after the exit. */
void proc_signal(proc *p, int sig);

/* Stop the group: SIGTERM (+SIGCONT) now, SIGKILL after grace_ms (<= 0:
 * PROC_DEFAULT_GRACE_MS) unless the leader has exited first.  Only the
 * first call counts. */
void proc_stop(proc *p, int64_t grace_ms);

/* Schedule the SIGKILL as proc_stop() would, without sending SIGTERM
 * (the caller forwarded a signal of its own and wants the same ending). */
void proc_kill_after(proc *p, int64_t grace_ms);

typedef enum proc_end {
	PROC_END_EXIT,    /* the leader exited on its own */
	PROC_END_TIMEOUT, /* deadline reached; we stopped the group */
	PROC_END_CANCEL,  /* *cancel became non-zero; we stopped the group */
} proc_end;

/*
 * Wait for the exit, stopping the group (proc_stop with grace_ms) at
 * deadline_ms (monotonic, INT64_MAX for none) or as soon as *cancel is
 * non-zero (looked at every PROC_TICK_MS at most; cancel may be NULL).
 * kill_by (may be NULL) brings the SIGKILL of a stop forward: when *kill_by
 * is non-zero it lands by then (monotonic ms) if the grace would end later,
 * also for a stop already under way.  Returns with the leader exited and
 * not yet reaped.
 */
proc_end proc_wait(proc *p, int64_t deadline_ms, const atomic_int *cancel, int64_t grace_ms,
		   const atomic_llong *kill_by);

/*
 * Read what is left in the pipe (at most PROC_DRAIN_MAX_MS: a background
 * grandchild may hold the write end open), close our fds, kill and reap
 * the guard, and reap the leader, blocking until it has exited if it has
 * not.  0 and *status as
 * from waitpid, or the errno that lost the status (ECHILD when SIGCHLD is
 * ignored or someone reaped it for us).  p is spent afterwards.
 */
int proc_reap(proc *p, int *status);

/* The dbcron-guard program the guards run in, or NULL when they are
 * forks of this process (none found, or DBCRON_GUARD=fork). */
const char *proc_guard_helper(void);

/* Exit code in the shell's convention: the status, or 128 + signal. */
int proc_exit_code(int status);

#endif
