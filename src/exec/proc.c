/*
 * Child processes in groups of their own: posix_spawnp() into a new
 * process group, a wait that reads the child's output, and the stop that
 * reaches the whole tree (SIGTERM, a grace, SIGKILL).
 *
 * Owns, per proc: the leader (reaped by proc_reap() and nowhere else),
 * the pipe's read end and a pidfd.  No global state, so any number of
 * threads may each drive their own procs.
 *
 *   spawn --> RUNNING --exit--------------------------------> reap
 *                |                                      ^
 *                `--proc_stop--> SIGTERM+SIGCONT group  |
 *                                (grace) --exit---------+--> SIGKILL group
 *                                (grace over) ---> SIGKILL group
 *
 * Invariants:
 *  - every fd we open is O_CLOEXEC from birth (pipe2, pidfd), so a child
 *    another thread spawns at the same moment never inherits one;
 *  - the leader is not reaped until we are done signalling the group
 *    (waitid with WNOWAIT only peeks), so its pid -- the group id -- cannot
 *    be reused by an unrelated process while we may still kill(-pgid);
 *  - after a stop, the exit of the leader sends SIGKILL to what is left of
 *    the group at once: stragglers do not get the rest of the grace.
 *
 * Costs admitted: a normal exit leaves the rest of the group alone (like
 * cron, we let daemons a command started alone); a member that called
 * setsid() or setpgid() has left the group and is out of our reach.
 */
#define _GNU_SOURCE /* pipe2, GNU strerror_r */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/timeutil.h"
#include "exec/proc.h"

extern char **environ;

/* Without a pidfd we cannot sleep until the exit; poll the status often. */
#define TICK_NO_PIDFD_MS 10
/* Reads per wake-up before we look at the clock again, so a child that
 * writes without pause cannot starve the deadline and kill checks. */
#define READS_PER_TURN 16
#define READ_CHUNK 65536

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

static int spawn_child(const proc_opts *o, int out_fd, pid_t *pid)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none, dfl;
	short flags = POSIX_SPAWN_SETPGROUP;
	int e;

	if ((e = posix_spawn_file_actions_init(&fa)) != 0)
		return e;
	if ((e = posix_spawnattr_init(&attr)) != 0)
		goto out_destroy_fa;
	if (o->stdin_null &&
	    (e = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0)) != 0)
		goto out_destroy_attr;
	if (out_fd >= 0 &&
	    ((e = posix_spawn_file_actions_adddup2(&fa, out_fd, 1)) != 0 ||
	     (e = posix_spawn_file_actions_adddup2(&fa, out_fd, 2)) != 0))
		goto out_destroy_attr;
	/* A worker thread may block signals (the node takes SIGTERM through
	 * sigwait) and the host may ignore SIGPIPE: none of that is for the
	 * child, which must die of the SIGTERM we send. */
	if (!o->inherit_signals) {
		sigemptyset(&none);
		sigfillset(&dfl);
		sigdelset(&dfl, SIGKILL);
		sigdelset(&dfl, SIGSTOP);
		flags |= POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
		if ((e = posix_spawnattr_setsigmask(&attr, &none)) != 0 ||
		    (e = posix_spawnattr_setsigdefault(&attr, &dfl)) != 0)
			goto out_destroy_attr;
	}
	if ((e = posix_spawnattr_setflags(&attr, flags)) != 0 ||
	    (e = posix_spawnattr_setpgroup(&attr, 0)) != 0)
		goto out_destroy_attr;
	e = posix_spawnp(pid, o->argv[0], &fa, &attr, o->argv,
			 o->envp ? o->envp : environ);
out_destroy_attr:
	posix_spawnattr_destroy(&attr);
out_destroy_fa:
	posix_spawn_file_actions_destroy(&fa);
	return e;
}

int proc_spawn(proc *p, const proc_opts *o, dbcron_err *err)
{
	const char *cmd = o->argv && o->argv[0] ? o->argv[0] : "";
	int pfd[2] = {-1, -1};
	char eb[128];
	int e, rc;

	memset(p, 0, sizeof(*p));
	p->pid = -1;
	p->out_fd = -1;
	p->pidfd = -1;
	p->kill_at_ms = INT64_MAX;
	if (!cmd[0])
		return dbcron_err_set(err, DBCRON_EINVAL, "cannot execute '': no command");
	if (o->sink) {
		if (pipe2(pfd, O_CLOEXEC) != 0) {
			rc = dbcron_err_set(err, DBCRON_EIO, "cannot execute '%s': pipe: %s", cmd,
					    strerror_r(errno, eb, sizeof(eb)));
			goto out_close_pipe;
		}
		pfd[0] = fd_above_stdio(pfd[0]);
		pfd[1] = fd_above_stdio(pfd[1]);
		if (pfd[0] < 0 || pfd[1] < 0 || fcntl(pfd[0], F_SETFL, O_NONBLOCK) != 0) {
			rc = dbcron_err_set(err, DBCRON_EIO, "cannot execute '%s': pipe: %s", cmd,
					    strerror_r(errno, eb, sizeof(eb)));
			goto out_close_pipe;
		}
	}
	e = spawn_child(o, pfd[1], &p->pid);
	if (e != 0) {
		p->pid = -1;
		rc = dbcron_err_set(err, e == ENOENT ? DBCRON_ENOTFOUND : DBCRON_EIO,
				    "cannot execute '%s': %s", cmd, strerror_r(e, eb, sizeof(eb)));
		goto out_close_pipe;
	}
	/* Our copy of the write end must go, or we would never see EOF. */
	if (pfd[1] >= 0)
		close(pfd[1]);
	p->out_fd = pfd[0];
	p->sink = o->sink;
	p->sink_ctx = o->sink_ctx;
	p->pidfd = pidfd_open(p->pid, 0); /* -1: fall back to short ticks */
	return DBCRON_OK;

out_close_pipe:
	if (pfd[0] >= 0)
		close(pfd[0]);
	if (pfd[1] >= 0)
		close(pfd[1]);
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
		struct pollfd pf[2];
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
		int r = poll(pf, nf, (int)wait_ms);
		if (r < 0 && errno == EINTR)
			return check_exit(p);
		if (r > 0 && rslot >= 0 && pf[rslot].revents) {
			if (!pipe_read(p, READS_PER_TURN))
				pipe_close(p);
		}
	}
}

proc_end proc_wait(proc *p, int64_t deadline_ms, const atomic_int *cancel, int64_t grace_ms)
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
	if (p->pid > 0) {
		pid_t r;
		while ((r = waitpid(p->pid, status, 0)) < 0 && errno == EINTR)
			;
		if (r != p->pid)
			rc = errno ? errno : ECHILD;
	}
	p->pid = -1;
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
