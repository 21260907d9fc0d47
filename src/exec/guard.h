/*
 * The guard of one proc (internal to src/exec/): the process that starts
 * the job's leader and stops the job's group if the process that spawned
 * it dies.  proc.c is the only user.  The same code runs in one of two
 * places, chosen once per process by proc.c:
 *
 *  - the dbcron-guard program (src/exec/guard/main.c), posix_spawn'ed by
 *    proc_spawn() with the plan encoded in its argv: nothing of the
 *    spawning process is copied, so the cost does not grow with its size;
 *  - a fork() of the spawning process, when no dbcron-guard is found.
 *
 * Either way the guard is a child of the spawner, writes one guard_msg to
 * ctl_fd once the leader has exec'd (or failed to), and then waits.
 */
#ifndef DBCRON_EXEC_GUARD_H
#define DBCRON_EXEC_GUARD_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Bumped when the argv encoding or the report changes; a dbcron-guard
 * that speaks another one refuses with EPROTO. */
#define GUARD_PROTO "4"
#define GUARD_PROGRAM "dbcron-guard"

/* Everything the guard and the leader need, worked out before the guard
 * starts: after a fork they may not allocate, call getenv or take locks. */
typedef struct guard_plan {
	const char *file;    /* argv[0] of the command */
	char *const *argv;
	char *const *envp;
	const char *path;    /* the spawner's PATH, as posix_spawnp uses it */
	int out_fd;          /* write end for stdout+stderr, or -1 */
	int ctl_fd;          /* write end of the report pipe */
	bool stdin_null;
	int in_fd;           /* spawner side only, > 2: the guard's fd 0 (its
			      * leader inherits it), proc_opts.stdin_fd */
	bool inherit_signals;
	sigset_t mask;       /* the spawning thread's signal mask */
	pid_t parent;        /* the spawner's pid */
	int64_t grace_ms;    /* SIGTERM -> SIGKILL after the spawner's death */
	int max_fd;          /* for closing inherited fds without close_range */
	/* What the leader becomes between the clone and the exec, in this
	 * order: its ids (set_ids: setgroups, setgid, setuid, each checked),
	 * its directory (as the new user), its umask, its fds (close_fds:
	 * only 0-2 reach the command), its capabilities (no_caps: all
	 * dropped, so that what a node was given to switch users, CAP_SETUID
	 * and the like, is not the job's). */
	bool set_ids;
	uid_t uid;
	gid_t gid;
	const gid_t *groups;
	int ngroups;
	const char *cwd;     /* NULL: the guard's */
	bool cwd_or_root;    /* cwd cannot be entered: "/" instead */
	bool set_umask;
	mode_t umask;
	bool close_fds;
	bool no_caps;
	/* The supervisor's leaders (guard__serve): the guard's dispositions
	 * are all at their default already, so the leader only sets SIG_IGN
	 * for the signals in ignored (with inherit_signals) instead of
	 * looking at every signal; and its stdin is lead_in_fd (> 2) when the
	 * spawner gave one. */
	bool sigs_default;
	uint64_t ignored;
	int lead_in_fd;
} guard_plan;

/* What the guard reports, once: the leader's pid and 0 (it has exec'd),
 * its pid and the errno of the step that failed (it has exited 127; the
 * spawner reaps it), -1 and the errno that kept it from being created, or
 * GUARD_BAD_ARGV and EPROTO or EINVAL from a dbcron-guard that cannot
 * decode its argv.  stage says which step err belongs to. */
#define GUARD_BAD_ARGV (-2)
typedef enum guard_stage {
	GUARD_AT_EXEC = 0,  /* the exec (or creating the leader) */
	GUARD_AT_SETUP,     /* process group, stdio */
	GUARD_AT_SETGROUPS,
	GUARD_AT_SETGID,
	GUARD_AT_SETUID,
	GUARD_AT_IDCHECK,   /* the ids read back are not the ones set */
	GUARD_AT_CHDIR,
	GUARD_AT_CAPS,      /* dropping our capabilities */
} guard_stage;
typedef struct guard_msg {
	int32_t pid;
	int32_t err;
	int32_t stage; /* guard_stage */
} guard_msg;

/*
 * Be the guard: arm the parent-death signal, check the parent is still
 * gp->parent, start the leader as the parent's child, report, close
 * every inherited fd, join the leader's group and wait for the parent's
 * death (then stop the group) or the leader's exit (then leave).
 * Async-signal-safe.  Every signal must be blocked on entry.
 */
_Noreturn void guard__main(const guard_plan *gp);

/*
 * dbcron-guard's argv, after argv[0]:
 *   PROTO FLAGS OUT_FD CTL_FD PARENT GRACE_MS MASK PATH IDS CWD UMASK ARGC CMD... ""
 * FLAGS: letters n (stdin from /dev/null), i (inherit signals), r (cwd or
 * "/"), c (close fds), a (drop capabilities), or "-"; MASK: hex, bit n-1 set when signal n is
 * blocked (1..64); IDS: "-" or UID:GID:G1,G2,...; CWD: "-" or an absolute
 * path; UMASK: "-" or octal.  The "" after the command is where its NULL
 * goes.  The command's environment is the guard's own environment, never
 * in the argv.  GUARD_ARGV_FIXED counts the slots before CMD, argv[0]
 * included.
 */
#define GUARD_ARGV_FIXED 13
/*
 * The supervisor: one guard for many runs, for the runs that close every
 * inherited fd (proc.c says why those only).  dbcron-guard's argv is then
 *   PROTO serve SOCK_FD PARENT
 * and every request comes on SOCK_FD, a stream socket to the spawner, as
 * a guard_req and its payload: the groups (uint32 each), then
 * NUL-terminated strings: PATH, CWD (with GUARD_F_CWD), argc argv
 * strings, envc environment strings.  The out and in fds (GUARD_F_OUT,
 * GUARD_F_IN, in that order) come with the header as SCM_RIGHTS.  The
 * answer to each request is one guard_msg on the same socket.  Requests
 * come one at a time (the spawner holds a lock from the request to the
 * answer).
 */
#define GUARD_SERVE "serve"
#define GUARD_REQ_SPAWN 1u
#define GUARD_REQ_ADOPT 2u /* guard the group of a running leader (pid):
			    * its first supervisor died */
#define GUARD_REQ_MAX (64u << 20) /* payload bytes: more is refused */
#define GUARD_F_STDIN_NULL 0x001u
#define GUARD_F_INHERIT 0x002u
#define GUARD_F_CWD_OR_ROOT 0x004u
#define GUARD_F_CLOSE_FDS 0x008u
#define GUARD_F_NO_CAPS 0x010u
#define GUARD_F_IDS 0x020u
#define GUARD_F_UMASK 0x040u
#define GUARD_F_OUT 0x080u
#define GUARD_F_IN 0x100u
#define GUARD_F_CWD 0x200u
typedef struct guard_req {
	uint32_t kind;    /* GUARD_REQ_* */
	uint32_t flags;   /* GUARD_F_* */
	uint32_t len;     /* payload bytes after this header */
	uint32_t uid, gid, umask;
	int32_t ngroups, argc, envc;
	int32_t pid;      /* GUARD_REQ_ADOPT: the leader */
	int64_t grace_ms;
	uint64_t mask;    /* the spawning thread's blocked signals, bit n-1 = n */
	uint64_t ignored; /* with GUARD_F_INHERIT: the signals the spawner ignores */
} guard_req;

/* Be the supervisor on sock until the spawner (parent) is gone and every
 * run it started has been stopped, or until sock is closed and every run
 * has ended.  Every signal must be blocked and every disposition at its
 * default on entry. */
_Noreturn void guard__serve(int sock, pid_t parent);

/* Fill gp from such an argv (which it then points into and changes);
 * the supplementary groups go into groups[0..cap).  0, EPROTO for another
 * protocol, EINVAL for anything malformed. */
int guard__parse(int argc, char **argv, guard_plan *gp, gid_t *groups, size_t cap);

#endif
