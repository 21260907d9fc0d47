/*
 * Child processes in groups of their own: the job started in a new
 * process group by a guard process that outlives us only to stop that
 * group, a wait that reads the job's output, and the stop that reaches
 * the whole tree (SIGTERM, a grace, SIGKILL).
 *
 * Owns, per proc: the leader (reaped by proc_reap() and nowhere else),
 * its guard (killed and reaped by proc_reap()), the pipe's read end and a
 * pidfd.  The only global state is where the guard runs, found once.
 *
 *   spawn --> RUNNING --exit--------------------------------> reap: SIGKILL and
 *                |                                      ^      reap the guard,
 *                `--proc_stop--> SIGTERM+SIGCONT group  |      then the leader
 *                                (grace) --exit---------+--> SIGKILL group
 *                                (grace over) ---> SIGKILL group
 *
 *   we die (kill -9, crash, OOM) --> guard: SIGTERM+SIGCONT group
 *                 --leader exits or grace over--> SIGKILL group (and itself)
 *
 * Why a guard.  A job must not outlive the process that runs it: when a
 * node is killed with SIGKILL another node retries the run once the lease
 * lapses, and the first attempt must be gone by then.  Nothing in the
 * kernel does that for a process group.  PR_SET_PDEATHSIG on the job
 * itself is not enough: it reaches one process, not the group; it is
 * cleared when the job execs a setuid program; and it fires when the
 * *thread* that forked exits, not the process.  PR_SET_CHILD_SUBREAPER
 * on us changes where orphans go while we live, nothing once we are dead.
 * A pipe whose EOF means "we died" needs someone to read it.  A cgroup
 * would catch everything but needs a delegation we cannot assume.  So
 * each job gets a guard of its own, a process that is armed (its death
 * signal set, our pid checked) before the job exists, starts the job, and
 * stops the job's group when we are gone (guard.c has its life).  The
 * guard starts the leader with CLONE_PARENT, so the leader is our child:
 * everything after the spawn is as it was with posix_spawn -- we wait for
 * the leader, peek at it with WNOWAIT, reap it and get its own status.
 *
 * Where the guard runs.  Forking us for every run is simple but costs in
 * proportion to our size and, in a threaded node, stalls the other threads
 * while the page tables are copied (docs/benchmarks.md has figures).  So the
 * guard normally is the dbcron-guard program next to our executable (or
 * $DBCRON_GUARD), posix_spawn'ed with the plan in its argv: only the C
 * library is loaded, nothing of ours is copied.  Without it (an embedding
 * program that ships no helper, or DBCRON_GUARD=fork) the guard is a
 * fork() of us running the same code.
 *
 * Invariants:
 *  - every fd we open is O_CLOEXEC from birth (pipe2, pidfd), so a child
 *    another thread spawns at the same moment never inherits one; the
 *    guard gets its two through posix_spawn's dup2 onto themselves, and
 *    closes all it inherited once the leader has exec'd;
 *  - the leader is not reaped until we are done signalling the group
 *    (waitid with WNOWAIT only peeks) and its guard is gone, so its pid --
 *    the group id -- cannot be reused while we or the guard may kill(-pgid);
 *  - after a stop, the exit of the leader sends SIGKILL to what is left of
 *    the group at once: stragglers do not get the rest of the grace;
 *  - a forked guard runs nothing but async-signal-safe code, with every
 *    signal blocked from before the fork, so no lock another thread held
 *    and no handler of ours can run in it.
 *
 * Costs admitted: two processes per job against RLIMIT_NPROC; an exec of
 * dbcron-guard per run (or a fork of us, see above) -- except for the
 * runs that share a supervisor ("the supervisor" below), one process per
 * job plus four per busy process.  A normal exit
 * leaves the rest of the group alone (like cron, we let daemons a command
 * started alone) and the guard leaves with the leader.  A member that
 * called setsid() or setpgid() has left the group and is out of our
 * reach, and so is everything if the guard itself is killed (a job that
 * sends SIGKILL to its own group).  Linux only: CLONE_PARENT, signalfd,
 * pidfd.
 */
#define _GNU_SOURCE /* pipe2, GNU strerror_r */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/log.h"
#include "core/timeutil.h"
#include "exec/guard.h"
#include "exec/proc.h"

extern char **environ;

/* Without a pidfd we cannot sleep until the exit; poll the status often. */
#define TICK_NO_PIDFD_MS 10
/* Reads per wake-up before we look at the clock again, so a child that
 * writes without pause cannot starve the deadline and kill checks. */
#define READS_PER_TURN 16
#define READ_CHUNK 65536
/* execvp's search path when PATH is unset (confstr(_CS_PATH) on glibc). */
#define DEFAULT_PATH "/bin:/usr/bin"

static int64_t min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

/* Keep our pipe ends off 0-2: if the host closed its stdio, pipe2() may
 * hand us fd 1, and dup2(1, 1) in the child would not clear CLOEXEC. */
static int fd_above_stdio(int fd)
{
	if (fd < 0 || fd > 2)
		return fd;
	int nfd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	int e = errno;
	close(fd);
	errno = e;
	return nfd;
}

static void close_pair(int fd[2])
{
	for (int i = 0; i < 2; i++)
		if (fd[i] >= 0)
			close(fd[i]);
	fd[0] = fd[1] = -1;
}

static void reap_blocking(pid_t pid)
{
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
}

/* ---- where the guard runs: found once, read-only afterwards ---- */

static pthread_once_t helper_once = PTHREAD_ONCE_INIT;
static char helper_path[PATH_MAX]; /* "": fork the guard */

#ifndef DBCRON_GUARD_RELDIR
#define DBCRON_GUARD_RELDIR "../libexec/dbcron"
#endif

/* dir + name into helper_path when it is an executable there. */
static bool helper_at(const char *dir, const char *sub)
{
	int w = snprintf(helper_path, sizeof(helper_path), "%s%s%s%s", dir, sub, *sub ? "/" : "",
			 GUARD_PROGRAM);
	if (w < 0 || (size_t)w >= sizeof(helper_path) || access(helper_path, X_OK) != 0) {
		helper_path[0] = '\0';
		return false;
	}
	return true;
}

/* $DBCRON_GUARD ("fork": no helper; a path: that one, whether or not it
 * is there, so a wrong setting fails loudly), else dbcron-guard in the
 * directory of our executable (the build tree, or a program that ships it
 * beside itself), else where `make install` puts it: LIBEXECDIR/dbcron,
 * relative to the installed dbcron's directory (/usr/bin/../libexec/dbcron
 * for /usr). */
static void find_helper(void)
{
	const char *env = getenv("DBCRON_GUARD");
	char exe[PATH_MAX];

	if (env && strcmp(env, "fork") == 0)
		return;
	if (env && env[0]) {
		if (strlen(env) < sizeof(helper_path))
			memcpy(helper_path, env, strlen(env) + 1);
		return;
	}
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return;
	exe[n] = '\0';
	char *slash = strrchr(exe, '/');
	if (!slash)
		return;
	slash[1] = '\0';
	if (!helper_at(exe, "") && !helper_at(exe, DBCRON_GUARD_RELDIR))
		dbcron__log(LOG_DEBUG, "proc.guard", LOG_STR("helper", GUARD_PROGRAM),
			    LOG_STR("dir", exe), LOG_STR("msg", "helper not found; guards are forked"));
}

const char *proc_guard_helper(void)
{
	pthread_once(&helper_once, find_helper);
	return helper_path[0] ? helper_path : NULL;
}

/* ---- starting the guard ---- */

static size_t count_strings(char *const *v)
{
	size_t n = 0;
	while (v[n])
		n++;
	return n;
}

/* posix_spawn dbcron-guard with the plan as its argv (guard.h) and every
 * signal blocked.  The job's environment is the guard's own environment,
 * never its argv: any user can read a process's argv in /proc/PID/cmdline,
 * only its owner its environ, and a job's environment may hold secrets.
 * The guard is linked statically, so LD_PRELOAD and the like in it do not
 * apply to the guard itself. */
/* IDS of the guard's argv: "-" or UID:GID:G1,G2,... (owned, or NULL). */
static char *ids_arg(const guard_plan *gp)
{
	size_t cap = 48 + (size_t)(gp->set_ids ? gp->ngroups : 0) * 12, n;
	char *s = dbcron__malloc(cap);
	if (!s)
		return NULL;
	if (!gp->set_ids) {
		snprintf(s, cap, "-");
		return s;
	}
	n = (size_t)snprintf(s, cap, "%lu:%lu:", (unsigned long)gp->uid, (unsigned long)gp->gid);
	for (int i = 0; i < gp->ngroups && n < cap; i++)
		n += (size_t)snprintf(s + n, cap - n, "%s%lu", i ? "," : "",
				      (unsigned long)gp->groups[i]);
	return s;
}

static int spawn_helper(const guard_plan *gp, pid_t *pid)
{
	char flags[8], out_s[16], ctl_s[16], parent_s[24], grace_s[24], mask_s[24], cmdc_s[24];
	char umask_s[16];
	size_t cmdc = count_strings(gp->argv);
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t all, dfl;
	int e = ENOMEM;

	char **av = dbcron__calloc(GUARD_ARGV_FIXED + cmdc + 2, sizeof(char *));
	char *ids = ids_arg(gp);
	if (!av || !ids)
		goto out_free_argv;
	uint64_t mask = 0;
	for (int sig = 1; sig <= 64 && sig < NSIG; sig++)
		if (sigismember(&gp->mask, sig) == 1)
			mask |= 1ULL << (sig - 1);
	snprintf(flags, sizeof(flags), "%s%s%s%s%s", gp->stdin_null ? "n" : "",
		 gp->inherit_signals ? "i" : "", gp->cwd && gp->cwd_or_root ? "r" : "",
		 gp->close_fds ? "c" : "", gp->no_caps ? "a" : "");
	if (!flags[0])
		snprintf(flags, sizeof(flags), "-");
	snprintf(out_s, sizeof(out_s), "%d", gp->out_fd);
	snprintf(ctl_s, sizeof(ctl_s), "%d", gp->ctl_fd);
	snprintf(parent_s, sizeof(parent_s), "%d", (int)gp->parent);
	snprintf(grace_s, sizeof(grace_s), "%lld", (long long)gp->grace_ms);
	snprintf(mask_s, sizeof(mask_s), "%llx", (unsigned long long)mask);
	snprintf(cmdc_s, sizeof(cmdc_s), "%zu", cmdc);
	if (gp->set_umask)
		snprintf(umask_s, sizeof(umask_s), "%03o", (unsigned)gp->umask & 0777);
	else
		snprintf(umask_s, sizeof(umask_s), "-");
	char *fixed[GUARD_ARGV_FIXED] = {
		GUARD_PROGRAM, GUARD_PROTO, flags, out_s, ctl_s, parent_s, grace_s, mask_s,
		(char *)gp->path, ids, gp->cwd ? (char *)gp->cwd : "-", umask_s, cmdc_s,
	};
	memcpy(av, fixed, sizeof(fixed));
	memcpy(av + GUARD_ARGV_FIXED, gp->argv, cmdc * sizeof(char *));
	av[GUARD_ARGV_FIXED + cmdc] = "";

	if ((e = posix_spawn_file_actions_init(&fa)) != 0)
		goto out_free_argv;
	if ((e = posix_spawnattr_init(&attr)) != 0)
		goto out_destroy_fa;
	/* dup2 onto itself clears FD_CLOEXEC in the guard only. */
	if ((e = posix_spawn_file_actions_adddup2(&fa, gp->ctl_fd, gp->ctl_fd)) != 0 ||
	    (gp->out_fd >= 0 &&
	     (e = posix_spawn_file_actions_adddup2(&fa, gp->out_fd, gp->out_fd)) != 0) ||
	    (gp->in_fd > 2 && (e = posix_spawn_file_actions_adddup2(&fa, gp->in_fd, 0)) != 0))
		goto out_destroy_attr;
	short sflags = POSIX_SPAWN_SETSIGMASK;
	sigfillset(&all);
	if ((e = posix_spawnattr_setsigmask(&attr, &all)) != 0)
		goto out_destroy_attr;
	if (!gp->inherit_signals) {
		sigfillset(&dfl);
		sigdelset(&dfl, SIGKILL);
		sigdelset(&dfl, SIGSTOP);
		sflags |= POSIX_SPAWN_SETSIGDEF;
		if ((e = posix_spawnattr_setsigdefault(&attr, &dfl)) != 0)
			goto out_destroy_attr;
	}
	if ((e = posix_spawnattr_setflags(&attr, sflags)) != 0)
		goto out_destroy_attr;
	e = posix_spawn(pid, helper_path, &fa, &attr, av, gp->envp);
out_destroy_attr:
	posix_spawnattr_destroy(&attr);
out_destroy_fa:
	posix_spawn_file_actions_destroy(&fa);
out_free_argv:
	dbcron__free(ids);
	dbcron__free(av);
	return e;
}

/* The guard as a fork of us.  Every signal is blocked across the fork,
 * so no handler of ours runs in the child before guard__main (which
 * expects them blocked). */
static int fork_guard(const guard_plan *gp, pid_t *pid)
{
	sigset_t all, old;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pid_t g = fork();
	if (g == 0) {
		/* the ctl pipe's EOF tells the spawner this failed */
		if (gp->in_fd > 2 && dup2(gp->in_fd, 0) < 0)
			_exit(127);
		guard__main(gp);
	}
	int e = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (g < 0)
		return e;
	*pid = g;
	return 0;
}

/* Read the report; false at EOF or error (the guard died first). */
static bool read_msg(int fd, guard_msg *m)
{
	char *p = (char *)m;
	size_t got = 0;
	while (got < sizeof(*m)) {
		ssize_t n = read(fd, p + got, sizeof(*m) - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		got += (size_t)n;
	}
	return true;
}

/* The error of the step the leader failed at (guard.h's stages). */
static int step_error(const guard_plan *gp, const char *who, int stage, int e,
		      dbcron_err *err)
{
	static const char *const steps[] = {
		[GUARD_AT_SETGROUPS] = "setgroups", [GUARD_AT_SETGID] = "setgid",
		[GUARD_AT_SETUID] = "setuid", [GUARD_AT_IDCHECK] = "the ids read back",
	};
	char eb[128], hint[160] = "";
	const char *why = strerror_r(e, eb, sizeof(eb));

	switch (stage) {
	case GUARD_AT_SETGROUPS:
	case GUARD_AT_SETGID:
	case GUARD_AT_SETUID:
	case GUARD_AT_IDCHECK:
		/* the usual cause, said plainly: a node that is not root */
		if (e == EPERM)
			snprintf(hint, sizeof(hint),
				 "; this process runs as uid %lu, and only root (or CAP_SETUID "
				 "and CAP_SETGID) can switch users", (unsigned long)geteuid());
		return dbcron_err_set(err, DBCRON_EIO, "cannot run '%s' as %s (uid %lu, gid %lu): %s: %s%s",
				      gp->file, who ? who : "another user", (unsigned long)gp->uid,
				      (unsigned long)gp->gid, steps[stage], why, hint);
	case GUARD_AT_CAPS:
		return dbcron_err_set(err, DBCRON_EIO, "cannot run '%s': dropping capabilities: %s",
				      gp->file, why);
	case GUARD_AT_CHDIR:
		return dbcron_err_set(err, e == ENOENT ? DBCRON_ENOTFOUND : DBCRON_EIO,
				      "cannot run '%s' in '%s': %s", gp->file,
				      gp->cwd ? gp->cwd : "", why);
	default:
		return dbcron_err_set(err, e == ENOENT ? DBCRON_ENOTFOUND : DBCRON_EIO,
				      "cannot execute '%s': %s", gp->file, why);
	}
}

/* Start the guard and read its report.  DBCRON_OK with *leader and *guard
 * set, or an error (every process reaped by then). */
static int start_guarded(guard_plan *gp, const char *who, int ctl[2], pid_t *leader,
			 pid_t *guard, dbcron_err *err)
{
	const char *cmd = gp->file;
	guard_msg m;
	char eb[128];
	pid_t g = -1;
	int rc;

	*leader = *guard = -1;
	int e = helper_path[0] ? spawn_helper(gp, &g) : fork_guard(gp, &g);
	if (e != 0) {
		if (helper_path[0])
			return dbcron_err_set(err, DBCRON_EIO, "cannot execute '%s': guard '%s': %s",
					      cmd, helper_path, strerror_r(e, eb, sizeof(eb)));
		return dbcron_err_set(err, DBCRON_EIO, "cannot execute '%s': fork: %s", cmd,
				      strerror_r(e, eb, sizeof(eb)));
	}
	close(ctl[1]);
	ctl[1] = -1;
	if (!read_msg(ctl[0], &m)) {
		rc = dbcron_err_set(err, DBCRON_EIO,
				    "cannot execute '%s': its guard process died before starting it", cmd);
		goto out_reap_guard;
	}
	if (m.pid == GUARD_BAD_ARGV) {
		rc = dbcron_err_set(err, DBCRON_EIO,
				    "cannot execute '%s': guard '%s' does not understand this dbcron "
				    "(protocol %s; one from another build?)", cmd, helper_path, GUARD_PROTO);
		goto out_reap_guard;
	}
	if (m.pid > 0 && m.err != 0)
		reap_blocking(m.pid); /* it exited 127 after the failed step */
	if (m.pid < 0 || m.err != 0) {
		e = m.err ? m.err : EAGAIN;
		rc = step_error(gp, who, m.stage, e, err);
		goto out_reap_guard;
	}
	*leader = m.pid;
	*guard = g;
	return DBCRON_OK;

out_reap_guard:
	kill(g, SIGKILL);
	reap_blocking(g);
	return rc;
}

/* ---- the supervisor: one guard for every run that closes our fds ---- */

/*
 * A guard process per run costs a process per run (about 0.4 ms of CPU on
 * the 2-core machine, docs/benchmarks.md "Shell runs and their guard"),
 * which is most of what a short job costs.  So the runs that can share
 * one share a supervisor: one dbcron-guard per process, started at the
 * first such run, that starts each leader on request (a message on a
 * socket, guard.h) and stops every group it guards when we die, as each
 * guard did for its own.  The leader is still our child (CLONE_PARENT),
 * so everything else in this file is as it was.
 *
 * Which runs: those with close_fds and a cwd (the shell executor's, the
 * reactions' programs).  A run that keeps our inheritable fds must get
 * them as they are at its spawn, which only a process started at that
 * moment has; so does one that starts in our current directory.  Those
 * (`dbcron lock`) keep a guard of their own, and so does everything when
 * the guard is a fork of us (a fork living as long as we do would hold a
 * copy-on-write image of us all that time) or the kernel has no pidfd.
 *
 * Supervisors live while shared runs do: the last run to end stops them
 * (sup_leave), so a process with no run under way has no child of ours.
 *
 * When the supervisor dies while we live (someone killed it), each proc
 * it guarded sees its pidfd turn readable in proc_wait_until() and hands
 * its group to a new one (GUARD_REQ_ADOPT): a window of one wake-up in
 * which our death would leave that run unguarded.
 *
 * What a run inherits beyond proc_opts (umask when not set, resource
 * limits, nice value, cgroup) is ours as it was when the supervisor
 * started.  The supervisor takes one request at a time: sup_mu is held
 * from a request to its answer (a clone and the kernel's part of the
 * exec, ~0.1 ms here).
 */
struct proc_sup {
	pid_t pid;   /* our child */
	int sock;    /* our end of its socket */
	int pidfd;   /* readable once it has exited */
	int refs;    /* its slot's, and one per proc it guards; under its
		      * slot's mutex */
	int slot;
	bool reaped;
};

/* SUP_SLOTS supervisors, each thread sending to one of them: one alone
 * serialises every spawn of the process through one task, which on a
 * busy machine waits its turn for the CPU like any other (measured:
 * docs/benchmarks.md, 1, 2, 4 and 8 of them; 4 did as well as 8).  A
 * thread keeps the slot it was given at its first spawn. */
#define SUP_SLOTS 4
static struct sup_slot {
	pthread_mutex_t mu;
	struct proc_sup *cur; /* the one new runs go to; under mu */
} sup_slots[SUP_SLOTS];
static atomic_int sup_next;
static _Thread_local int sup_my_slot = -1;
/* Shared runs between their request and their reap; sup_life_mu is
 * taken before any slot's mutex, never after. */
static pthread_mutex_t sup_life_mu = PTHREAD_MUTEX_INITIALIZER;
static long sup_inflight;
static pthread_once_t sup_once = PTHREAD_ONCE_INIT;
static bool sup_ok; /* set once: a supervisor can work here */

static void sup_prepare(void)
{
	pthread_mutex_lock(&sup_life_mu);
	for (int i = 0; i < SUP_SLOTS; i++)
		pthread_mutex_lock(&sup_slots[i].mu);
}

static void sup_parent(void)
{
	for (int i = SUP_SLOTS - 1; i >= 0; i--)
		pthread_mutex_unlock(&sup_slots[i].mu);
	pthread_mutex_unlock(&sup_life_mu);
}

/* In a fork of us: the supervisors are our parent's, and their leaders
 * would be our parent's children.  Ours start at our first run that needs
 * one; the structs are left to the procs that may still point at them. */
static void sup_child(void)
{
	for (int i = SUP_SLOTS - 1; i >= 0; i--) {
		struct proc_sup *c = sup_slots[i].cur;
		if (c) {
			close(c->sock);
			close(c->pidfd);
			c->sock = c->pidfd = -1;
			c->reaped = true;
			sup_slots[i].cur = NULL;
		}
		pthread_mutex_unlock(&sup_slots[i].mu);
	}
	sup_inflight = 0;
	pthread_mutex_unlock(&sup_life_mu);
}

static void sup_init(void)
{
	int fd = helper_path[0] ? pidfd_open(getpid(), 0) : -1;
	if (fd < 0)
		return;
	close(fd);
	for (int i = 0; i < SUP_SLOTS; i++)
		pthread_mutex_init(&sup_slots[i].mu, NULL);
	sup_ok = pthread_atfork(sup_prepare, sup_parent, sup_child) == 0;
}

static struct sup_slot *my_slot(void)
{
	if (sup_my_slot < 0)
		sup_my_slot = atomic_fetch_add(&sup_next, 1) % SUP_SLOTS;
	return &sup_slots[sup_my_slot];
}

/* Under its slot's mutex. */
static void sup_unref(struct proc_sup *s);
static void sup_abandon(struct proc_sup *s);

/* A shared run begins (from its request to its reap). */
static void sup_enter(void)
{
	pthread_mutex_lock(&sup_life_mu);
	sup_inflight++;
	pthread_mutex_unlock(&sup_life_mu);
}

/* A shared run has ended; the last one stops every supervisor: they
 * guard nothing then, and a process of ours that outlived every run
 * would be a child nobody asked for (a host reaping its children, a
 * test proving it has none left, a count of our fds).  So a process
 * whose runs never overlap pays a supervisor per run, about what a
 * guard of its own cost, and a busy one shares it. */
static void sup_leave(void)
{
	pthread_mutex_lock(&sup_life_mu);
	if (--sup_inflight <= 0) { /* < 0: a fork's child reaping its parent's */
		sup_inflight = 0;
		for (int i = 0; i < SUP_SLOTS; i++) {
			pthread_mutex_lock(&sup_slots[i].mu);
			if (sup_slots[i].cur)
				sup_abandon(sup_slots[i].cur);
			pthread_mutex_unlock(&sup_slots[i].mu);
		}
	}
	pthread_mutex_unlock(&sup_life_mu);
}

static void sup_unref(struct proc_sup *s)
{
	if (--s->refs > 0)
		return;
	if (s->sock >= 0)
		close(s->sock);
	if (s->pidfd >= 0)
		close(s->pidfd);
	dbcron__free(s);
}

/* Under its slot's mutex: s is dead or no use (its socket failed, it
 * refused): no new run goes to it, and it is killed and reaped. */
static void sup_abandon(struct proc_sup *s)
{
	if (!s->reaped) {
		/* through its pidfd: the pid alone could name another process
		 * if a host broke proc.h's rule and reaped it */
		if (s->pidfd >= 0)
			pidfd_send_signal(s->pidfd, SIGKILL, NULL, 0);
		reap_blocking(s->pid);
		s->reaped = true;
	}
	if (sup_slots[s->slot].cur == s) {
		sup_slots[s->slot].cur = NULL;
		sup_unref(s);
	}
}

/* posix_spawn dbcron-guard serve with every signal blocked (it keeps
 * them so), no environment and sock its only fd of ours. */
static int sup_exec(int sock, pid_t *pid)
{
	static char *const no_env[] = {NULL};
	char fd_s[16], parent_s[24];
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t all;
	int e;

	snprintf(fd_s, sizeof(fd_s), "%d", sock);
	snprintf(parent_s, sizeof(parent_s), "%d", (int)getpid());
	char *argv[] = {GUARD_PROGRAM, GUARD_PROTO, GUARD_SERVE, fd_s, parent_s, NULL};
	if ((e = posix_spawn_file_actions_init(&fa)) != 0)
		return e;
	if ((e = posix_spawnattr_init(&attr)) != 0)
		goto out_destroy_fa;
	sigfillset(&all);
	/* dup2 onto itself clears FD_CLOEXEC in the supervisor only */
	if ((e = posix_spawn_file_actions_adddup2(&fa, sock, sock)) == 0 &&
	    (e = posix_spawnattr_setsigmask(&attr, &all)) == 0 &&
	    (e = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK)) == 0)
		e = posix_spawn(pid, helper_path, &fa, &attr, argv, no_env);
	posix_spawnattr_destroy(&attr);
out_destroy_fa:
	posix_spawn_file_actions_destroy(&fa);
	return e;
}

/* Under the slot's mutex: a new supervisor, or NULL with err set. */
static struct proc_sup *sup_start(int slot, const char *cmd, dbcron_err *err)
{
	char eb[128];
	int sv[2] = {-1, -1};
	int e = ENOMEM;
	pid_t pid = -1;

	struct proc_sup *s = dbcron__calloc(1, sizeof(*s));
	if (!s)
		goto out_fail;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0 ||
	    (sv[0] = fd_above_stdio(sv[0])) < 0 || (sv[1] = fd_above_stdio(sv[1])) < 0) {
		e = errno;
		goto out_fail;
	}
	if ((e = sup_exec(sv[1], &pid)) != 0)
		goto out_fail;
	s->pid = pid;
	s->sock = sv[0];
	s->refs = 1;
	s->slot = slot;
	if ((s->pidfd = pidfd_open(pid, 0)) < 0) {
		e = errno;
		kill(pid, SIGKILL);
		reap_blocking(pid);
		goto out_fail;
	}
	close(sv[1]);
	return s;

out_fail:
	close_pair(sv);
	dbcron__free(s);
	dbcron_err_set(err, DBCRON_EIO, "cannot execute '%s': guard '%s': %s", cmd, helper_path,
		       strerror_r(e, eb, sizeof(eb)));
	return NULL;
}

/* Send all of buf, the fds with its first bytes.  0 or the errno. */
static int sup_send(int sock, const char *buf, size_t len, const int *fds, int nfds)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(2 * sizeof(int))];
	} cm;
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};

	memset(&cm, 0, sizeof(cm));
	if (nfds > 0) {
		mh.msg_control = cm.b;
		mh.msg_controllen = CMSG_SPACE((size_t)nfds * sizeof(int));
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN((size_t)nfds * sizeof(int));
		memcpy(CMSG_DATA(c), fds, (size_t)nfds * sizeof(int));
	}
	while (iov.iov_len > 0) {
		ssize_t w = sendmsg(sock, &mh, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return errno;
		iov.iov_base = (char *)iov.iov_base + w;
		iov.iov_len -= (size_t)w;
		mh.msg_control = NULL; /* the fds went with the first bytes */
		mh.msg_controllen = 0;
	}
	return 0;
}

/* Bytes of a string vector and its count. */
static size_t vec_bytes(char *const *v, int32_t *n)
{
	size_t b = 0;
	for (*n = 0; v[*n]; (*n)++)
		b += strlen(v[*n]) + 1;
	return b;
}

static char *put_str(char *at, const char *str)
{
	size_t n = strlen(str) + 1;
	memcpy(at, str, n);
	return at + n;
}

/* The spawn request for gp (guard.h's layout), owned, or NULL. */
static char *sup_request(const guard_plan *gp, size_t *len)
{
	guard_req r = {.kind = GUARD_REQ_SPAWN, .uid = gp->uid, .gid = gp->gid,
		       .umask = gp->umask, .ngroups = gp->set_ids ? gp->ngroups : 0,
		       .grace_ms = gp->grace_ms};
	size_t n = (size_t)r.ngroups * sizeof(uint32_t) + strlen(gp->path) + 1 +
		   (gp->cwd ? strlen(gp->cwd) + 1 : 0);
	n += vec_bytes(gp->argv, &r.argc) + vec_bytes(gp->envp, &r.envc);
	if (n > GUARD_REQ_MAX)
		return NULL;
	r.len = (uint32_t)n;
	r.flags = (gp->stdin_null ? GUARD_F_STDIN_NULL : 0) | (gp->inherit_signals ? GUARD_F_INHERIT : 0) |
		  (gp->cwd_or_root ? GUARD_F_CWD_OR_ROOT : 0) | (gp->close_fds ? GUARD_F_CLOSE_FDS : 0) |
		  (gp->no_caps ? GUARD_F_NO_CAPS : 0) | (gp->set_ids ? GUARD_F_IDS : 0) |
		  (gp->set_umask ? GUARD_F_UMASK : 0) | (gp->out_fd >= 0 ? GUARD_F_OUT : 0) |
		  (gp->in_fd > 2 ? GUARD_F_IN : 0) | (gp->cwd ? GUARD_F_CWD : 0);
	for (int sig = 1; sig <= 64 && sig < NSIG; sig++) {
		struct sigaction sa;
		if (sigismember(&gp->mask, sig) == 1)
			r.mask |= 1ULL << (sig - 1);
		/* what we ignore stays ignored for it (nohup) */
		if (gp->inherit_signals && sigaction(sig, NULL, &sa) == 0 && sa.sa_handler == SIG_IGN)
			r.ignored |= 1ULL << (sig - 1);
	}
	char *b = dbcron__malloc(sizeof(r) + n);
	if (!b)
		return NULL;
	memcpy(b, &r, sizeof(r));
	char *at = b + sizeof(r);
	for (int i = 0; i < r.ngroups; i++, at += sizeof(uint32_t)) {
		uint32_t g = (uint32_t)gp->groups[i];
		memcpy(at, &g, sizeof(g));
	}
	at = put_str(at, gp->path);
	if (gp->cwd)
		at = put_str(at, gp->cwd);
	for (int i = 0; i < r.argc; i++)
		at = put_str(at, gp->argv[i]);
	for (int i = 0; i < r.envc; i++)
		at = put_str(at, gp->envp[i]);
	*len = sizeof(r) + n;
	return b;
}

/* Under sl's mutex: send req to its supervisor (a new one if there is
 * none or the one we had is gone before reading it) and read its answer
 * into m.  DBCRON_OK with *used the supervisor that answered, or an
 * error. */
static int sup_call(struct sup_slot *sl, const char *req, size_t len, const int *fds, int nfds,
		    const char *cmd, guard_msg *m, struct proc_sup **used, dbcron_err *err)
{
	for (int attempt = 0; attempt < 2; attempt++) {
		if (!sl->cur && !(sl->cur = sup_start((int)(sl - sup_slots), cmd, err)))
			return err->code;
		struct proc_sup *s = sl->cur;
		if (sup_send(s->sock, req, len, fds, nfds) != 0) {
			sup_abandon(s); /* it died before reading: nothing started */
			continue;
		}
		if (!read_msg(s->sock, m)) {
			sup_abandon(s);
			return dbcron_err_set(err, DBCRON_EIO, "cannot execute '%s': its guard "
					      "process died before starting it", cmd);
		}
		if (m->pid == GUARD_BAD_ARGV) {
			sup_abandon(s);
			return dbcron_err_set(err, DBCRON_EIO, "cannot execute '%s': guard '%s' does not "
					      "understand this dbcron (protocol %s; one from another "
					      "build?)", cmd, helper_path, GUARD_PROTO);
		}
		*used = s;
		return DBCRON_OK;
	}
	return dbcron_err_set(err, DBCRON_EIO, "cannot execute '%s': guard '%s' died at once", cmd,
			      helper_path);
}

/* The leader of gp started by the supervisor; as start_guarded(). */
static int spawn_shared(proc *p, guard_plan *gp, const char *who, dbcron_err *err)
{
	int fds[2], nfds = 0, rc;
	struct proc_sup *s = NULL;
	size_t len;
	guard_msg m;

	char *req = sup_request(gp, &len);
	if (!req)
		return dbcron_err_set(err, DBCRON_ENOMEM, "cannot execute '%s': out of memory", gp->file);
	if (gp->out_fd >= 0)
		fds[nfds++] = gp->out_fd;
	if (gp->in_fd > 2)
		fds[nfds++] = gp->in_fd;
	sup_enter();
	struct sup_slot *sl = my_slot();
	pthread_mutex_lock(&sl->mu);
	rc = sup_call(sl, req, len, fds, nfds, gp->file, &m, &s, err);
	if (rc == DBCRON_OK && m.pid > 0 && m.err == 0)
		s->refs++;
	pthread_mutex_unlock(&sl->mu);
	dbcron__free(req);
	if (rc == DBCRON_OK && m.pid > 0 && m.err != 0)
		reap_blocking(m.pid); /* it exited 127 after the failed step */
	if (rc == DBCRON_OK && (m.pid < 0 || m.err != 0))
		rc = step_error(gp, who, m.stage, m.err ? m.err : EAGAIN, err);
	if (rc != DBCRON_OK) {
		sup_leave();
		return rc;
	}
	p->pid = m.pid;
	p->sup = s;
	p->shared = true;
	return DBCRON_OK;
}

/* Our supervisor has died under a running p: hand p's group to a new one
 * (or to none, when none can start: then p is unguarded, as a run whose
 * own guard was killed). */
static void sup_rearm(proc *p)
{
	struct proc_sup *old = p->sup;
	dbcron_err err = {0};
	guard_msg m = {0};

	struct sup_slot *sl = &sup_slots[old->slot];
	pthread_mutex_lock(&sl->mu);
	sup_abandon(old);
	guard_req r = {.kind = GUARD_REQ_ADOPT, .pid = p->pid, .grace_ms = p->grace_ms};
	struct proc_sup *s = NULL;
	int rc = p->exited ? DBCRON_OK
			   : sup_call(sl, (const char *)&r, sizeof(r), NULL, 0, "", &m, &s, &err);
	p->sup = NULL;
	if (rc == DBCRON_OK && s && m.err == 0) {
		s->refs++;
		p->sup = s;
	}
	sup_unref(old);
	pthread_mutex_unlock(&sl->mu);
	if (!p->sup && !p->exited)
		dbcron__log(LOG_WARN, "proc.guard", LOG_INT("pid", p->pid),
			    LOG_STR("msg", "guard died; the run goes on unguarded"),
			    LOG_STR("error", err.msg[0] ? err.msg : "adopt refused"));
}

static void sup_release(proc *p)
{
	if (p->sup) {
		pthread_mutex_t *mu = &sup_slots[p->sup->slot].mu;
		pthread_mutex_lock(mu);
		sup_unref(p->sup);
		pthread_mutex_unlock(mu);
		p->sup = NULL;
	}
	if (p->shared)
		sup_leave();
	p->shared = false;
}

/* ---- spawning ---- */

/* The per-run guard's report pipe; DBCRON_OK or an error. */
static int ctl_pipe(int ctl[2], const char *cmd, dbcron_err *err)
{
	char eb[128];
	if (pipe2(ctl, O_CLOEXEC) != 0 || (ctl[0] = fd_above_stdio(ctl[0])) < 0 ||
	    (ctl[1] = fd_above_stdio(ctl[1])) < 0)
		return dbcron_err_set(err, DBCRON_EIO, "cannot execute '%s': pipe: %s", cmd,
				      strerror_r(errno, eb, sizeof(eb)));
	return DBCRON_OK;
}

/* The plan for o; out and ctl are the pipes' write ends (or -1). */
static void plan_of(guard_plan *gp, const proc_opts *o, const char *cmd, int out, int ctl)
{
	const char *path = o->path ? o->path : getenv("PATH");
	long max_fd = sysconf(_SC_OPEN_MAX);
	*gp = (guard_plan){
		.file = cmd,
		.argv = o->argv,
		.envp = o->envp ? o->envp : environ,
		.path = path ? path : DEFAULT_PATH,
		.set_ids = o->set_ids,
		.uid = o->uid,
		.gid = o->gid,
		.groups = o->groups,
		.ngroups = o->set_ids ? o->ngroups : 0,
		.cwd = o->cwd,
		.cwd_or_root = o->cwd_or_root,
		.set_umask = o->set_umask,
		.umask = o->umask,
		.close_fds = o->close_fds,
		.no_caps = o->no_caps,
		.out_fd = out,
		.ctl_fd = ctl,
		.stdin_null = o->stdin_null && o->stdin_fd <= 2,
		.in_fd = o->stdin_fd > 2 ? o->stdin_fd : -1,
		.inherit_signals = o->inherit_signals,
		.parent = getpid(),
		.grace_ms = o->death_grace_ms > 0 ? o->death_grace_ms : PROC_DEFAULT_GRACE_MS,
		.max_fd = max_fd > 0 && max_fd < 65536 ? (int)max_fd : 65536,
	};
	pthread_sigmask(SIG_BLOCK, NULL, &gp->mask);
}

int proc_spawn(proc *p, const proc_opts *o, dbcron_err *err)
{
	const char *cmd = o->argv && o->argv[0] ? o->argv[0] : "";
	int pfd[2] = {-1, -1};
	int ctl[2] = {-1, -1};
	char eb[128];
	guard_plan gp;
	int rc;

	memset(p, 0, sizeof(*p));
	p->pid = -1;
	p->guard = -1;
	p->out_fd = -1;
	p->pidfd = -1;
	p->kill_at_ms = INT64_MAX;
	if (!cmd[0])
		return dbcron_err_set(err, DBCRON_EINVAL, "cannot execute '': no command");
	pthread_once(&helper_once, find_helper);
	pthread_once(&sup_once, sup_init);
	if (o->sink) {
		if (pipe2(pfd, O_CLOEXEC) != 0) {
			rc = dbcron_err_set(err, DBCRON_EIO, "cannot execute '%s': pipe: %s", cmd,
					    strerror_r(errno, eb, sizeof(eb)));
			goto out_close_pipes;
		}
		pfd[0] = fd_above_stdio(pfd[0]);
		pfd[1] = fd_above_stdio(pfd[1]);
		if (pfd[0] < 0 || pfd[1] < 0 || fcntl(pfd[0], F_SETFL, O_NONBLOCK) != 0) {
			rc = dbcron_err_set(err, DBCRON_EIO, "cannot execute '%s': pipe: %s", cmd,
					    strerror_r(errno, eb, sizeof(eb)));
			goto out_close_pipes;
		}
	}
	bool shared = sup_ok && o->close_fds && o->cwd;
	if (!shared && (rc = ctl_pipe(ctl, cmd, err)) != DBCRON_OK)
		goto out_close_pipes;
	plan_of(&gp, o, cmd, pfd[1], ctl[1]);
	p->grace_ms = gp.grace_ms;
	rc = shared ? spawn_shared(p, &gp, o->who, err)
		    : start_guarded(&gp, o->who, ctl, &p->pid, &p->guard, err);
	if (rc != DBCRON_OK)
		goto out_close_pipes;
	close_pair(ctl);
	/* Our copy of the write end must go, or we would never see EOF. */
	if (pfd[1] >= 0)
		close(pfd[1]);
	p->out_fd = pfd[0];
	p->sink = o->sink;
	p->sink_ctx = o->sink_ctx;
	p->pidfd = pidfd_open(p->pid, 0); /* -1: fall back to short ticks */
	return DBCRON_OK;

out_close_pipes:
	close_pair(ctl);
	close_pair(pfd);
	return rc;
}

/* ---- output ---- */

/* Read what is there.  Returns false at EOF or error, when the caller
 * closes the pipe. */
static bool pipe_read(proc *p, int max_reads)
{
	char buf[READ_CHUNK];

	for (int i = 0; i < max_reads; i++) {
		ssize_t n = read(p->out_fd, buf, sizeof(buf));
		if (n > 0) {
			p->sink(p->sink_ctx, buf, (size_t)n);
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return true;
		return false;
	}
	return true;
}

static void pipe_close(proc *p)
{
	if (p->out_fd >= 0)
		close(p->out_fd);
	p->out_fd = -1;
}

/* ---- signals ---- */

static void signal_group(const proc *p, int sig)
{
	/* ESRCH cannot happen while the leader is unreaped; anything else
	 * would be EPERM from a setuid grandchild we cannot touch anyway. */
	(void)kill(-p->pid, sig);
}

static void send_kill(proc *p)
{
	if (!p->killed) {
		signal_group(p, SIGKILL);
		p->killed = true;
	}
}

void proc_signal(proc *p, int sig)
{
	if (p->pid <= 0 || p->exited)
		return;
	signal_group(p, sig);
	/* A stopped member would keep the signal pending for ever. */
	if (sig != SIGKILL && sig != SIGCONT)
		signal_group(p, SIGCONT);
}

void proc_kill_after(proc *p, int64_t grace_ms)
{
	if (p->stopping || p->pid <= 0)
		return;
	int64_t now = dbcron__mono_ms();
	int64_t grace = grace_ms > 0 ? grace_ms : PROC_DEFAULT_GRACE_MS;
	p->stopping = true;
	p->kill_at_ms = grace < INT64_MAX - now ? now + grace : INT64_MAX;
	/* Already gone: the stragglers are due now, not after the grace. */
	if (p->exited)
		send_kill(p);
}

void proc_stop(proc *p, int64_t grace_ms)
{
	if (p->stopping || p->pid <= 0)
		return;
	proc_signal(p, SIGTERM);
	proc_kill_after(p, grace_ms);
}

/* ---- waiting ---- */

/* Has the leader exited?  Peeks without reaping (see the header). */
static bool leader_exited(pid_t pid)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) != 0)
		return errno != EINTR; /* ECHILD: someone reaped it for us */
	return si.si_pid == pid;
}

static bool check_exit(proc *p)
{
	if (p->exited || p->pid <= 0) /* nothing started, or reaped */
		return true;
	if (!leader_exited(p->pid))
		return false;
	p->exited = true;
	/* Members that outlived a SIGTERM we sent are stragglers. */
	if (p->stopping)
		send_kill(p);
	return true;
}

bool proc_wait_until(proc *p, int64_t until_ms)
{
	for (;;) {
		if (check_exit(p))
			return true;
		int64_t now = dbcron__mono_ms();
		if (p->stopping && now >= p->kill_at_ms)
			send_kill(p);
		if (now >= until_ms)
			return false;

		int64_t wait_ms = p->pidfd >= 0 ? until_ms - now : TICK_NO_PIDFD_MS;
		if (p->stopping && !p->killed)
			wait_ms = min64(wait_ms, p->kill_at_ms - now);
		wait_ms = min64(wait_ms, until_ms - now);
		if (wait_ms < 0)
			wait_ms = 0;
		if (wait_ms > 60000)
			wait_ms = 60000; /* fits an int; we loop anyway */
		struct pollfd pf[3];
		nfds_t nf = 0;
		int rslot = -1;
		if (p->out_fd >= 0) {
			pf[nf].fd = p->out_fd;
			pf[nf].events = POLLIN;
			pf[nf].revents = 0;
			rslot = (int)nf++;
		}
		if (p->pidfd >= 0) {
			pf[nf].fd = p->pidfd;
			pf[nf].events = POLLIN;
			pf[nf].revents = 0;
			nf++;
		}
		int sslot = -1; /* our supervisor's death */
		if (p->sup && p->sup->pidfd >= 0) {
			pf[nf].fd = p->sup->pidfd;
			pf[nf].events = POLLIN;
			pf[nf].revents = 0;
			sslot = (int)nf++;
		}
		int r = poll(pf, nf, (int)wait_ms);
		if (r < 0 && errno == EINTR)
			return check_exit(p);
		if (r > 0 && rslot >= 0 && pf[rslot].revents) {
			if (!pipe_read(p, READS_PER_TURN))
				pipe_close(p);
		}
		if (r > 0 && sslot >= 0 && pf[sslot].revents)
			sup_rearm(p);
	}
}

proc_end proc_wait(proc *p, int64_t deadline_ms, const atomic_int *cancel, int64_t grace_ms,
		   const atomic_llong *kill_by)
{
	proc_end why = PROC_END_EXIT;

	for (;;) {
		if (why == PROC_END_EXIT) {
			if (cancel && atomic_load(cancel))
				why = PROC_END_CANCEL;
			else if (dbcron__mono_ms() >= deadline_ms)
				why = PROC_END_TIMEOUT;
			if (why != PROC_END_EXIT)
				proc_stop(p, grace_ms);
		}
		/* Looked at on every tick: the bound may come after the stop
		 * began (a replaced run whose node then loses its lease). */
		int64_t by = kill_by ? atomic_load(kill_by) : 0;
		if (by > 0 && p->stopping && !p->killed && by < p->kill_at_ms)
			p->kill_at_ms = by;
		int64_t now = dbcron__mono_ms();
		int64_t until = now + PROC_TICK_MS;
		/* Only the cancel flag needs the tick; with nothing to watch
		 * but the deadline we sleep until it. */
		if (why == PROC_END_EXIT && !cancel)
			until = deadline_ms;
		else if (why == PROC_END_EXIT)
			until = min64(until, deadline_ms);
		if (proc_wait_until(p, until))
			return why;
	}
}

int proc_reap(proc *p, int *status)
{
	int64_t until = dbcron__mono_ms() + PROC_DRAIN_MAX_MS;
	int rc = 0;

	while (p->out_fd >= 0 && dbcron__mono_ms() < until) {
		char buf[READ_CHUNK];
		ssize_t n = read(p->out_fd, buf, sizeof(buf));
		if (n > 0)
			p->sink(p->sink_ctx, buf, (size_t)n);
		else if (n < 0 && errno == EINTR)
			continue;
		else
			break; /* EOF, EAGAIN (a quiet holder) or an error */
	}
	pipe_close(p);
	if (p->pidfd >= 0)
		close(p->pidfd);
	p->pidfd = -1;
	/* The guard leaves by itself once the leader has exited; killing it
	 * saves waiting for that.  Before the leader is reaped, so that the
	 * group id stays ours for as long as the guard may signal it. */
	if (p->guard > 0) {
		kill(p->guard, SIGKILL);
		reap_blocking(p->guard);
		p->guard = -1;
	}
	if (p->pid > 0) {
		pid_t r;
		while ((r = waitpid(p->pid, status, 0)) < 0 && errno == EINTR)
			;
		if (r != p->pid)
			rc = errno ? errno : ECHILD;
	}
	p->pid = -1;
	sup_release(p);
	return rc;
}

int proc_exit_code(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 1;
}
