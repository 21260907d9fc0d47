/*
 * The guard: a process that starts a job's leader and outlives the
 * spawner only to stop the job's process group (proc.c says why it
 * exists; guard.h where it runs).  Owns nothing but itself: the leader is
 * made the spawner's child, so the spawner waits for it and reaps it.
 *
 *   guard: PR_SET_PDEATHSIG, getppid() == spawner?  (no: start nothing)
 *     --clone(CLONE_VM|CLONE_VFORK|CLONE_PARENT)--> leader: setpgid(0, 0),
 *                       signals, stdio, ids (setgroups, setgid, setuid),
 *                       chdir, umask, fds, capabilities, exec (PATH as
 *                       execvp)
 *     report {leader pid, exec errno} on ctl_fd; close every inherited fd;
 *     setpgid(0, leader): join the group
 *     poll(signalfd of the death signal, pidfd of the leader):
 *       spawner gone  --> SIGTERM+SIGCONT group; leader exits or grace
 *                         over --> SIGKILL group (the guard with it)
 *       leader exited --> leave: the run is over
 *
 * Invariants:
 *  - the guard is armed (death signal set, parent checked) before the
 *    leader exists, so the job never runs unguarded;
 *  - the death signal only says "look": the guard acts when getppid() is
 *    no longer the spawner, so a spawning thread that exits (which fires
 *    it too, see prctl(2)) changes nothing;
 *  - the guard signals the group only while it is a member, so the group
 *    id cannot have been reused by then; it blocks every signal, so the
 *    spawner's own SIGTERM to the group does not end it, and the final
 *    SIGKILL does;
 *  - everything here is async-signal-safe (plus system calls glibc wraps
 *    thinly: prctl, clone, signalfd, pidfd_open, close_range), because
 *    after a fork of a threaded spawner nothing else is; the leader runs
 *    in the guard's memory and touches only its own stack and the plan.
 *
 * The supervisor (guard__serve, near the end) is the same guard for many
 * runs: it starts each leader on request with the same code, keeps a
 * pidfd of each, and when the spawner dies stops every group whose leader
 * has not exited.  It is in none of the groups, so the group id it
 * signals is held by that unexited leader instead.
 *
 * Costs admitted: should the guard be killed between the leader's exec
 * and its report (two system calls), the leader runs unguarded and the
 * spawner never learns its pid.  Linux only (CLONE_PARENT, signalfd,
 * pidfd).
 */
#define _GNU_SOURCE /* clone, close_range, signalfd, CLONE_PARENT */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#include "exec/guard.h"

/* The death signal.  Which one does not matter (it stays blocked, is read
 * from a signalfd, and getppid() decides); SIGHUP says what it means. */
#define DEATH_SIG SIGHUP
/* Without a signalfd or a pidfd, how often getppid() is looked at. */
#define TICK_MS 100
/* The leader's stack, in the guard's memory while the guard is suspended
 * (CLONE_VFORK).  Stacks grow down on every Linux port we build for. */
#define LEADER_STACK (256 * 1024)

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void write_full(int fd, const void *buf, size_t n)
{
	const char *p = buf;
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

/* ---- the leader ---- */

/*
 * execvp's search, as posix_spawnp does it (no /bin/sh retry on ENOEXEC):
 * a name with a slash is run as it is; otherwise each PATH element in
 * turn (empty = the current directory), going on past a missing or
 * inaccessible file, stopping at any other error; EACCES if some file was
 * found but not executable, else the last error.  Returns that errno.
 */
static int exec_search(const guard_plan *gp)
{
	char buf[PATH_MAX + NAME_MAX + 2];
	size_t flen = strlen(gp->file);
	bool eacces = false;
	int last = ENOENT;

	if (strchr(gp->file, '/')) {
		execve(gp->file, gp->argv, gp->envp);
		return errno;
	}
	if (flen > NAME_MAX)
		return ENAMETOOLONG;
	for (const char *p = gp->path;;) {
		const char *end = strchr(p, ':');
		size_t dlen = end ? (size_t)(end - p) : strlen(p);
		if (dlen <= PATH_MAX) { /* longer elements cannot name a file */
			size_t k = dlen;
			memcpy(buf, p, dlen);
			if (dlen > 0)
				buf[k++] = '/';
			memcpy(buf + k, gp->file, flen + 1);
			execve(buf, gp->argv, gp->envp);
			switch (errno) {
			case EACCES:
				eacces = true;
				/* fall through */
			case ENOENT:
			case ESTALE:
			case ENOTDIR:
			case ENODEV:
			case ETIMEDOUT:
				last = errno;
				break;
			default:
				return errno; /* found, but it cannot run */
			}
		}
		if (!end)
			break;
		p = end + 1;
	}
	return eacces ? EACCES : last;
}

struct leader_arg {
	const guard_plan *gp;
	volatile int err;   /* set by the leader before _exit; 0 after an exec */
	volatile int stage; /* guard_stage of err */
};

/*
 * The job's user, switched in the leader and not in the spawner or the
 * guard: the spawner is a threaded node that must stay root to start the
 * next job, and the guard must stay the spawner's user so that the job
 * cannot kill or ptrace it (and it can still signal a group that execs a
 * setuid program).  The leader is the one process that becomes the job.
 *
 * The names were resolved by the spawner (getpwnam, getgrouplist: they
 * allocate and read files, which is not for after a fork), so what is
 * left here is initgroups' system call and the two after it, in that
 * order: setgroups while we may, then setgid, then setuid.  They are made
 * with syscall(2), not through the C library: glibc's wrappers broadcast
 * the change to every thread the library knows of (the kernel keeps ids
 * per thread), and the leader shares the guard's memory, which with the
 * fork fallback is a copy of the threaded node's -- posix_spawn does the
 * same for POSIX_SPAWN_RESETIDS.  Each is checked, and the ids are read
 * back: a switch that did not happen must not run the job as root.
 */
#ifdef SYS_setresuid32 /* 32-bit ABIs: the 16-bit calls keep the old names */
#define SYS_SETGROUPS SYS_setgroups32
#define SYS_SETRESGID SYS_setresgid32
#define SYS_SETRESUID SYS_setresuid32
#define SYS_GETRESGID SYS_getresgid32
#define SYS_GETRESUID SYS_getresuid32
#else
#define SYS_SETGROUPS SYS_setgroups
#define SYS_SETRESGID SYS_setresgid
#define SYS_SETRESUID SYS_setresuid
#define SYS_GETRESGID SYS_getresgid
#define SYS_GETRESUID SYS_getresuid
#endif

/* 0, or the errno with *stage set to the step that failed. */
static int switch_ids(const guard_plan *gp, volatile int *stage)
{
	uid_t ru, eu, su;
	gid_t rg, eg, sg;

	*stage = GUARD_AT_SETGROUPS;
	if (syscall(SYS_SETGROUPS, (size_t)gp->ngroups, gp->groups) != 0)
		return errno;
	*stage = GUARD_AT_SETGID;
	if (syscall(SYS_SETRESGID, gp->gid, gp->gid, gp->gid) != 0)
		return errno;
	*stage = GUARD_AT_SETUID;
	if (syscall(SYS_SETRESUID, gp->uid, gp->uid, gp->uid) != 0)
		return errno;
	*stage = GUARD_AT_IDCHECK;
	if (syscall(SYS_GETRESUID, &ru, &eu, &su) != 0 ||
	    syscall(SYS_GETRESGID, &rg, &eg, &sg) != 0)
		return errno;
	if (ru != gp->uid || eu != gp->uid || su != gp->uid || rg != gp->gid ||
	    eg != gp->gid || sg != gp->gid)
		return EPERM;
	return 0;
}

/*
 * Every capability of ours dropped before the exec.  A node run as a user
 * of its own with CAP_SETUID, CAP_SETGID and CAP_KILL (docs/security.md)
 * would pass them on: the ambient set through any exec, the inheritable
 * one to a program whose file grants it.  Nothing after this point needs
 * one, and what the exec itself gives (a setuid or setcap program, or a
 * job that is root) is the system's rule, not ours.  The ambient set goes
 * first (dropping the permitted set clears it anyway); EINVAL there is a
 * kernel without ambient capabilities.
 */
static int drop_caps(void)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	struct __user_cap_data_struct none[_LINUX_CAPABILITY_U32S_3];

	memset(none, 0, sizeof(none));
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL)
		return errno;
	return syscall(SYS_capset, &hdr, none) == 0 ? 0 : errno;
}

/* Every fd but 0-2 closed, so the job holds none of ours (pipes of other
 * runs, the report pipe, whatever the node inherited). */
static void close_above_stdio(const guard_plan *gp)
{
	if (close_range(3, ~0U, 0) == 0)
		return;
	for (int fd = 3; fd < gp->max_fd; fd++)
		close(fd);
}

/* The leader's dispositions: every one at its default, or with
 * inherit_signals the ignored ones kept.  A supervisor's are all at the
 * default already (it started so), so its leaders only ignore what the
 * spawner ignores, without a system call per signal. */
static void reset_signals(const guard_plan *gp)
{
	struct sigaction sa;

	if (gp->sigs_default) {
		if (!gp->inherit_signals)
			return;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = SIG_IGN;
		for (int sig = 1; sig <= 64 && sig < NSIG; sig++)
			if (gp->ignored & (1ULL << (sig - 1)))
				sigaction(sig, &sa, NULL);
		return;
	}
	for (int sig = 1; sig < NSIG; sig++) {
		if (sig == SIGKILL || sig == SIGSTOP || sigaction(sig, NULL, &sa) != 0)
			continue; /* also the C library's own, which refuse */
		if (!gp->inherit_signals || (sa.sa_handler != SIG_DFL && sa.sa_handler != SIG_IGN)) {
			memset(&sa, 0, sizeof(sa));
			sa.sa_handler = SIG_DFL;
			sigaction(sig, &sa, NULL);
		}
	}
}

/* Between clone and exec: what POSIX_SPAWN_SETPGROUP, SETSIGDEF,
 * SETSIGMASK and the file actions do.  The leader has its own fd table
 * and dispositions (no CLONE_FILES, no CLONE_SIGHAND), so nothing it
 * changes reaches the guard. */
static int leader_main(void *arg)
{
	struct leader_arg *la = arg;
	const guard_plan *gp = la->gp;
	int e = 0;

	la->stage = GUARD_AT_SETUP;
	if (setpgid(0, 0) != 0) {
		e = errno;
		goto out_fail;
	}
	/* A worker thread may block signals and the host may ignore SIGPIPE:
	 * none of that is for the job, which must die of the SIGTERM we send.
	 * With inherit_signals ignored ones stay ignored (nohup); handlers
	 * are reset either way before anything is unblocked, so none of the
	 * spawner's runs here. */
	reset_signals(gp);
	if (gp->lead_in_fd > 2 && dup2(gp->lead_in_fd, 0) < 0) {
		e = errno;
		goto out_fail;
	}
	if (gp->stdin_null) {
		int fd = open("/dev/null", O_RDONLY);
		if (fd < 0 || (fd != 0 && dup2(fd, 0) < 0)) {
			e = errno;
			goto out_fail;
		}
		if (fd != 0)
			close(fd);
	}
	if (gp->out_fd >= 0 && (dup2(gp->out_fd, 1) < 0 || dup2(gp->out_fd, 2) < 0)) {
		e = errno;
		goto out_fail;
	}
	if (gp->set_ids && (e = switch_ids(gp, &la->stage)) != 0)
		goto out_fail;
	/* As the new user, so a directory it may not enter is an error. */
	if (gp->cwd) {
		la->stage = GUARD_AT_CHDIR;
		if (chdir(gp->cwd) != 0 && (!gp->cwd_or_root || chdir("/") != 0)) {
			e = errno;
			goto out_fail;
		}
	}
	if (gp->set_umask)
		umask(gp->umask);
	if (gp->close_fds)
		close_above_stdio(gp);
	if (gp->no_caps && (e = drop_caps()) != 0) {
		la->stage = GUARD_AT_CAPS;
		goto out_fail;
	}
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, gp->inherit_signals ? &gp->mask : &none, NULL);
	la->stage = GUARD_AT_EXEC;
	e = exec_search(gp);
out_fail:
	la->err = e ? e : EIO;
	_exit(127);
}

/* The leader as a child of our parent (CLONE_PARENT), sharing our memory
 * until it execs (CLONE_VM|CLONE_VFORK, as posix_spawn does).  Its pid
 * once it has exec'd, with *err 0; its pid with the errno of the step
 * *stage that failed; or -1. */
static pid_t leader_on(const guard_plan *gp, void *stack, int *pidfd, int *err, int *stage)
{
	struct leader_arg la = {.gp = gp, .err = 0, .stage = GUARD_AT_EXEC};
	int flags = CLONE_VM | CLONE_VFORK | CLONE_PARENT | SIGCHLD | (pidfd ? CLONE_PIDFD : 0);
	pid_t pid = clone(leader_main, (char *)stack + LEADER_STACK, flags, &la, pidfd);
	*stage = GUARD_AT_EXEC;
	*err = pid < 0 ? errno : la.err;
	if (pid >= 0 && la.err)
		*stage = la.stage;
	return pid;
}

static pid_t spawn_leader(const guard_plan *gp, int *err, int *stage)
{
	*stage = GUARD_AT_EXEC;
	void *stack = mmap(NULL, LEADER_STACK, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (stack == MAP_FAILED) {
		*err = errno;
		return -1;
	}
	pid_t pid = leader_on(gp, stack, NULL, err, stage);
	munmap(stack, LEADER_STACK);
	return pid;
}

/* ---- the guard ---- */

static void close_inherited(const guard_plan *gp)
{
	if (close_range(3, ~0U, 0) == 0)
		return;
	for (int fd = 3; fd < gp->max_fd; fd++)
		close(fd);
}

/* The spawner is gone: SIGTERM (+SIGCONT, for a stopped member) to the
 * group now, SIGKILL once the leader has exited (stragglers get no more
 * grace) or the grace is over.  We are a member: the SIGKILL ends us. */
static _Noreturn void stop_group(const guard_plan *gp, pid_t leader, int leader_fd)
{
	kill(-leader, SIGTERM);
	kill(-leader, SIGCONT);
	int64_t deadline = mono_ms() + gp->grace_ms;
	for (;;) {
		int64_t left = deadline - mono_ms();
		if (left <= 0)
			break;
		struct pollfd pf = {.fd = leader_fd, .events = POLLIN};
		if (poll(&pf, leader_fd >= 0 ? 1 : 0, left < 60000 ? (int)left : 60000) > 0)
			break;
	}
	kill(-leader, SIGKILL);
	_exit(0);
}

_Noreturn void guard__main(const guard_plan *gp)
{
	guard_msg msg;

#ifdef PR_SET_PDEATHSIG
	prctl(PR_SET_PDEATHSIG, DEATH_SIG);
#endif
	prctl(PR_SET_NAME, GUARD_PROGRAM);
	/* Died before the signal was armed: nobody to report to. */
	if (getppid() != gp->parent)
		_exit(0);
	int e, stage;
	pid_t leader = spawn_leader(gp, &e, &stage);
	msg.pid = leader;
	msg.err = e;
	msg.stage = stage;
	write_full(gp->ctl_fd, &msg, sizeof(msg));
	if (leader < 0 || e != 0)
		_exit(0);

	close_inherited(gp); /* the report and output pipes among them */
	/* Fails only if the leader has already left its group: then the id
	 * is not ours to signal.  (The spawner kills us before it reaps the
	 * leader, so the group cannot be gone while we run.) */
	if (setpgid(0, leader) != 0)
		_exit(0);
	sigset_t death;
	sigemptyset(&death);
	sigaddset(&death, DEATH_SIG);
	int sig_fd = signalfd(-1, &death, SFD_CLOEXEC | SFD_NONBLOCK);
	int leader_fd = pidfd_open(leader, 0);
	for (;;) {
		if (getppid() != gp->parent)
			stop_group(gp, leader, leader_fd);
		struct pollfd pf[2] = {
			{.fd = sig_fd, .events = POLLIN},
			{.fd = leader_fd, .events = POLLIN},
		};
		int r = poll(pf, 2, sig_fd >= 0 && leader_fd >= 0 ? -1 : TICK_MS);
		if (r > 0 && (pf[0].revents & POLLIN)) {
			struct signalfd_siginfo si;
			while (read(sig_fd, &si, sizeof(si)) > 0)
				;
		}
		if (getppid() != gp->parent)
			stop_group(gp, leader, leader_fd);
		if (r > 0 && pf[1].revents)
			_exit(0); /* the run is over; what it left is not ours */
	}
}

/* ---- the supervisor: one guard for many runs ---- */

/*
 * What a supervisor keeps: the runs it guards (a leader's pid, a pidfd
 * that turns readable when the leader exits, the grace of its stop), the
 * request it is reading, and one stack for the leader it is starting.
 * All of it in memory from mmap, never malloc: the same code runs in a
 * static program and must stay async-signal-safe (guard.h).
 */
#define SUP_KEY_SOCK UINT64_MAX
#define SUP_KEY_SIG (UINT64_MAX - 1)
#define SUP_EVENTS 64

struct sup_run {
	pid_t pid;   /* 0: a free slot */
	int pidfd;
	int64_t grace_ms;
	int64_t kill_at; /* after the spawner died: when the SIGKILL is due */
};

struct sup {
	int sock, ep, sig_fd;
	pid_t parent;
	struct sup_run *runs;
	size_t cap, live;
	char *buf; /* the request's payload, then its pointer arrays */
	size_t buf_cap;
	void *stack;
};

/* *p grown to at least want bytes (mmap'd, page-rounded); false when the
 * kernel gives no memory. */
static bool sup_grow(void **p, size_t *cap, size_t want)
{
	if (want <= *cap)
		return true;
	size_t n = *cap ? *cap : 65536;
	while (n < want)
		n *= 2;
	void *q = *cap ? mremap(*p, *cap, n, MREMAP_MAYMOVE)
		       : mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (q == MAP_FAILED)
		return false;
	*p = q;
	*cap = n;
	return true;
}

/* Guard one more leader: its slot, keyed in the epoll set by index. */
static int sup_track(struct sup *s, pid_t pid, int pidfd, int64_t grace_ms)
{
	size_t i = 0;
	while (i < s->cap / sizeof(struct sup_run) && s->runs[i].pid != 0)
		i++;
	if ((i + 1) * sizeof(struct sup_run) > s->cap) {
		size_t old = s->cap;
		if (!sup_grow((void **)&s->runs, &s->cap, (i + 1) * sizeof(struct sup_run)))
			return ENOMEM;
		memset((char *)s->runs + old, 0, s->cap - old); /* mremap: not zeroed */
	}
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = i};
	if (epoll_ctl(s->ep, EPOLL_CTL_ADD, pidfd, &ev) != 0)
		return errno;
	s->runs[i] = (struct sup_run){.pid = pid, .pidfd = pidfd, .grace_ms = grace_ms,
				      .kill_at = INT64_MAX};
	s->live++;
	return 0;
}

static void sup_forget(struct sup *s, size_t i)
{
	close(s->runs[i].pidfd); /* also leaves the epoll set */
	s->runs[i].pid = 0;
	s->live--;
}

/* Read exactly n bytes (the fds, if any, come with the first ones). */
static bool sup_read(int sock, void *buf, size_t n, int *fds, int *nfds)
{
	char *p = buf;
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(2 * sizeof(int))];
	} cm;
	while (n > 0) {
		struct iovec iov = {.iov_base = p, .iov_len = n};
		struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
		if (fds) {
			mh.msg_control = cm.b;
			mh.msg_controllen = sizeof(cm.b);
		}
		ssize_t r = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return false;
		struct cmsghdr *c = fds ? CMSG_FIRSTHDR(&mh) : NULL;
		if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
			size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			for (size_t j = 0; j < k; j++) {
				int fd;
				memcpy(&fd, CMSG_DATA(c) + j * sizeof(int), sizeof(int));
				if (*nfds < 2)
					fds[(*nfds)++] = fd;
				else
					close(fd);
			}
		}
		fds = NULL; /* they come once */
		p += r;
		n -= (size_t)r;
	}
	return true;
}

/* The next string of the payload at *at, or NULL past its end. */
static char *sup_str(char *buf, size_t len, size_t *at)
{
	if (*at >= len)
		return NULL;
	char *str = buf + *at;
	char *nul = memchr(str, '\0', len - *at);
	if (!nul)
		return NULL;
	*at = (size_t)(nul - buf) + 1;
	return str;
}

/* The plan of a spawn request from its payload (in s->buf); EINVAL when
 * it does not add up. */
static int sup_plan(struct sup *s, const guard_req *r, guard_plan *gp)
{
	size_t at = (size_t)r->ngroups * sizeof(uint32_t), nptr = (size_t)r->argc + r->envc + 2;
	size_t arr = (r->len + 15) & ~(size_t)15;
	if (r->ngroups < 0 || r->argc < 1 || r->envc < 0 || at > r->len ||
	    nptr > GUARD_REQ_MAX / sizeof(char *) ||
	    !sup_grow((void **)&s->buf, &s->buf_cap, arr + nptr * sizeof(char *)))
		return EINVAL;
	char **v = (char **)(s->buf + arr);
	memset(gp, 0, sizeof(*gp));
	gp->groups = (const gid_t *)s->buf; /* uint32_t is gid_t on Linux */
	gp->ngroups = r->ngroups;
	gp->path = sup_str(s->buf, r->len, &at);
	gp->cwd = r->flags & GUARD_F_CWD ? sup_str(s->buf, r->len, &at) : NULL;
	/* argv, NULL, the environment, NULL */
	for (size_t i = 0; i + 1 < nptr; i++)
		if (i != (size_t)r->argc && !(v[i] = sup_str(s->buf, r->len, &at)))
			return EINVAL;
	v[r->argc] = NULL;
	v[nptr - 1] = NULL;
	if (!gp->path || ((r->flags & GUARD_F_CWD) && !gp->cwd))
		return EINVAL;
	gp->file = v[0];
	gp->argv = v;
	gp->envp = v + r->argc + 1;
	return 0;
}

static void sup_answer(const struct sup *s, pid_t pid, int err, int stage)
{
	guard_msg m = {.pid = pid, .err = err, .stage = stage};
	const char *p = (const char *)&m;
	size_t n = sizeof(m);
	while (n > 0) { /* MSG_NOSIGNAL: a gone spawner is EPIPE, not a signal */
		ssize_t w = send(s->sock, p, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

/* Start the leader of a spawn request (fds: its out and in pipes). */
static void sup_spawn(struct sup *s, const guard_req *r, const int *fds, int nfds)
{
	guard_plan gp;
	int need = !!(r->flags & GUARD_F_OUT) + !!(r->flags & GUARD_F_IN), k = 0;
	int e = need == nfds ? sup_plan(s, r, &gp) : EINVAL;
	if (e != 0) {
		sup_answer(s, GUARD_BAD_ARGV, e, GUARD_AT_EXEC);
		return;
	}
	gp.out_fd = r->flags & GUARD_F_OUT ? fds[k++] : -1;
	gp.lead_in_fd = r->flags & GUARD_F_IN ? fds[k++] : -1;
	gp.ctl_fd = -1;
	gp.in_fd = -1;
	gp.stdin_null = r->flags & GUARD_F_STDIN_NULL;
	gp.inherit_signals = r->flags & GUARD_F_INHERIT;
	gp.cwd_or_root = r->flags & GUARD_F_CWD_OR_ROOT;
	gp.close_fds = r->flags & GUARD_F_CLOSE_FDS;
	gp.no_caps = r->flags & GUARD_F_NO_CAPS;
	gp.set_ids = r->flags & GUARD_F_IDS;
	gp.uid = r->uid;
	gp.gid = r->gid;
	gp.set_umask = r->flags & GUARD_F_UMASK;
	gp.umask = (mode_t)r->umask;
	gp.parent = s->parent;
	gp.grace_ms = r->grace_ms;
	gp.sigs_default = true;
	gp.ignored = r->ignored;
	sigemptyset(&gp.mask);
	for (int sig = 1; sig <= 64 && sig < NSIG; sig++)
		if (r->mask & (1ULL << (sig - 1)))
			sigaddset(&gp.mask, sig);
	long max_fd = sysconf(_SC_OPEN_MAX);
	gp.max_fd = max_fd > 0 && max_fd < 65536 ? (int)max_fd : 65536;

	int pidfd = -1, stage;
	pid_t pid = leader_on(&gp, s->stack, &pidfd, &e, &stage);
	sup_answer(s, pid, e, stage);
	if (pid < 0 || e != 0) {
		if (pidfd >= 0)
			close(pidfd);
		return;
	}
	/* Untracked (no memory for its slot), the run is as unguarded as one
	 * whose guard was killed: rare enough to accept, said in proc.c. */
	if (sup_track(s, pid, pidfd, r->grace_ms > 0 ? r->grace_ms : 2000) != 0)
		close(pidfd);
}

/* One request.  False when the socket is closed or out of step. */
static bool sup_serve_one(struct sup *s)
{
	guard_req r;
	int fds[2] = {-1, -1}, nfds = 0;
	bool ok = false;

	if (!sup_read(s->sock, &r, sizeof(r), fds, &nfds))
		goto out_close;
	if (r.len > GUARD_REQ_MAX || !sup_grow((void **)&s->buf, &s->buf_cap, r.len + 1) ||
	    !sup_read(s->sock, s->buf, r.len, NULL, NULL)) {
		sup_answer(s, GUARD_BAD_ARGV, E2BIG, GUARD_AT_EXEC);
		goto out_close;
	}
	ok = true;
	if (getppid() != s->parent) {
		/* gone while we read: start nothing (the caller stops the rest) */
	} else if (r.kind == GUARD_REQ_SPAWN) {
		sup_spawn(s, &r, fds, nfds);
	} else if (r.kind == GUARD_REQ_ADOPT) {
		int pidfd = r.pid > 0 ? (int)pidfd_open(r.pid, 0) : -1;
		int e = pidfd < 0 ? errno : sup_track(s, r.pid, pidfd, r.grace_ms);
		if (pidfd >= 0 && e != 0)
			close(pidfd);
		sup_answer(s, r.pid, e, GUARD_AT_EXEC);
	} else {
		sup_answer(s, GUARD_BAD_ARGV, EPROTO, GUARD_AT_EXEC);
		ok = false;
	}
out_close:
	for (int i = 0; i < nfds; i++)
		close(fds[i]); /* the leader has its copies */
	return ok;
}

/* The spawner is gone: every group we guard gets SIGTERM (+SIGCONT) now
 * and SIGKILL as soon as its leader has exited (stragglers get no more
 * grace) or its grace is over; then we leave.  The exits already seen are
 * taken first: a run that ended on its own is not ours to stop, and only
 * a leader that has not exited holds its pid, hence its group id. */
static _Noreturn void sup_stop_all(struct sup *s)
{
	struct epoll_event ev[SUP_EVENTS];
	size_t nslots = s->cap / sizeof(struct sup_run);
	int n;

	/* only the runs' pidfds from here on (the others stay readable) */
	epoll_ctl(s->ep, EPOLL_CTL_DEL, s->sock, NULL);
	epoll_ctl(s->ep, EPOLL_CTL_DEL, s->sig_fd, NULL);
	while ((n = epoll_wait(s->ep, ev, SUP_EVENTS, 0)) > 0)
		for (int i = 0; i < n; i++)
			if (ev[i].data.u64 < nslots && s->runs[ev[i].data.u64].pid)
				sup_forget(s, ev[i].data.u64);
	int64_t now = mono_ms();
	for (size_t i = 0; i < nslots; i++) {
		if (!s->runs[i].pid)
			continue;
		kill(-s->runs[i].pid, SIGTERM);
		kill(-s->runs[i].pid, SIGCONT);
		s->runs[i].kill_at = now + s->runs[i].grace_ms;
	}
	while (s->live > 0) {
		int64_t next = INT64_MAX;
		now = mono_ms();
		for (size_t i = 0; i < nslots; i++) {
			if (s->runs[i].pid && now >= s->runs[i].kill_at) {
				kill(-s->runs[i].pid, SIGKILL);
				sup_forget(s, i);
			} else if (s->runs[i].pid && s->runs[i].kill_at < next) {
				next = s->runs[i].kill_at;
			}
		}
		if (s->live == 0)
			break;
		int64_t left = next - now;
		n = epoll_wait(s->ep, ev, SUP_EVENTS, left < 60000 ? (int)left : 60000);
		for (int i = 0; i < n; i++) {
			uint64_t k = ev[i].data.u64;
			if (k < nslots && s->runs[k].pid) {
				kill(-s->runs[k].pid, SIGKILL);
				sup_forget(s, k);
			}
		}
	}
	_exit(0);
}

_Noreturn void guard__serve(int sock, pid_t parent)
{
	struct sup s = {.sock = sock, .parent = parent};
	struct epoll_event ev[SUP_EVENTS];
	sigset_t death;
	bool open = true;

#ifdef PR_SET_PDEATHSIG
	prctl(PR_SET_PDEATHSIG, DEATH_SIG);
#endif
	prctl(PR_SET_NAME, GUARD_PROGRAM);
	if (getppid() != parent)
		_exit(0);
	fcntl(sock, F_SETFD, FD_CLOEXEC); /* no leader may hold it */
	sigemptyset(&death);
	sigaddset(&death, DEATH_SIG);
	int sig_fd = s.sig_fd = signalfd(-1, &death, SFD_CLOEXEC | SFD_NONBLOCK);
	s.ep = epoll_create1(EPOLL_CLOEXEC);
	s.stack = mmap(NULL, LEADER_STACK, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	struct epoll_event se = {.events = EPOLLIN | EPOLLRDHUP, .data.u64 = SUP_KEY_SOCK};
	struct epoll_event de = {.events = EPOLLIN, .data.u64 = SUP_KEY_SIG};
	if (sig_fd < 0 || s.ep < 0 || s.stack == MAP_FAILED ||
	    epoll_ctl(s.ep, EPOLL_CTL_ADD, sock, &se) != 0 ||
	    epoll_ctl(s.ep, EPOLL_CTL_ADD, sig_fd, &de) != 0)
		_exit(1); /* the spawner sees the socket close at its first request */
	for (;;) {
		if (getppid() != parent)
			sup_stop_all(&s);
		if (!open && s.live == 0)
			_exit(0);
		int n = epoll_wait(s.ep, ev, SUP_EVENTS, -1);
		for (int i = 0; i < n; i++) {
			uint64_t k = ev[i].data.u64;
			if (k == SUP_KEY_SIG) {
				struct signalfd_siginfo si;
				while (read(sig_fd, &si, sizeof(si)) > 0)
					;
			} else if (k == SUP_KEY_SOCK) {
				if (getppid() != parent)
					sup_stop_all(&s);
				if (open && !sup_serve_one(&s)) {
					open = false;
					epoll_ctl(s.ep, EPOLL_CTL_DEL, sock, NULL);
				}
			} else if (k < s.cap / sizeof(struct sup_run) && s.runs[k].pid) {
				sup_forget(&s, k); /* the run is over */
			}
		}
	}
}

/* ---- the dbcron-guard program's argv ---- */

static bool parse_ll(const char *s, long long lo, long long hi, long long *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

/* IDS: "-", or UID:GID:G1,G2,... (the list may be empty). */
static int parse_ids(char *s, guard_plan *gp, gid_t *groups, size_t cap)
{
	if (strcmp(s, "-") == 0)
		return 0;
	char *end;
	errno = 0;
	unsigned long long uid = strtoull(s, &end, 10);
	if (errno || end == s || *end != ':' || uid > UINT32_MAX - 1)
		return EINVAL;
	char *g = end + 1;
	unsigned long long gid = strtoull(g, &end, 10);
	if (errno || end == g || *end != ':' || gid > UINT32_MAX - 1)
		return EINVAL;
	size_t n = 0;
	for (char *p = end + 1; *p;) {
		unsigned long long v = strtoull(p, &end, 10);
		if (errno || end == p || v > UINT32_MAX - 1 || n >= cap || (*end && *end != ','))
			return EINVAL;
		groups[n++] = (gid_t)v;
		p = *end ? end + 1 : end;
	}
	gp->set_ids = true;
	gp->uid = (uid_t)uid;
	gp->gid = (gid_t)gid;
	gp->groups = groups;
	gp->ngroups = (int)n;
	return 0;
}

int guard__parse(int argc, char **argv, guard_plan *gp, gid_t *groups, size_t cap)
{
	long long out_fd, ctl_fd, parent, grace, cmdc;

	if (argc < 2)
		return EINVAL;
	if (strcmp(argv[1], GUARD_PROTO) != 0)
		return EPROTO;
	if (argc < GUARD_ARGV_FIXED + 2)
		return EINVAL;
	memset(gp, 0, sizeof(*gp));
	for (const char *f = argv[2]; *f; f++) {
		if (*f == 'n')
			gp->stdin_null = true;
		else if (*f == 'i')
			gp->inherit_signals = true;
		else if (*f == 'r')
			gp->cwd_or_root = true;
		else if (*f == 'c')
			gp->close_fds = true;
		else if (*f == 'a')
			gp->no_caps = true;
		else if (*f != '-')
			return EINVAL;
	}
	if (parse_ids(argv[9], gp, groups, cap) != 0)
		return EINVAL;
	if (strcmp(argv[10], "-") != 0) {
		if (argv[10][0] != '/')
			return EINVAL;
		gp->cwd = argv[10];
	}
	if (strcmp(argv[11], "-") != 0) {
		char *um;
		errno = 0;
		unsigned long m = strtoul(argv[11], &um, 8);
		if (errno || um == argv[11] || *um || m > 0777)
			return EINVAL;
		gp->set_umask = true;
		gp->umask = (mode_t)m;
	}
	char *end;
	errno = 0;
	unsigned long long mask = strtoull(argv[7], &end, 16);
	if (errno || end == argv[7] || *end)
		return EINVAL;
	if (!parse_ll(argv[3], -1, INT_MAX, &out_fd) || !parse_ll(argv[4], 0, INT_MAX, &ctl_fd) ||
	    !parse_ll(argv[5], 1, INT_MAX, &parent) || !parse_ll(argv[6], 1, INT64_MAX, &grace) ||
	    !parse_ll(argv[12], 1, argc - GUARD_ARGV_FIXED - 1, &cmdc))
		return EINVAL;
	sigemptyset(&gp->mask);
	for (int sig = 1; sig <= 64 && sig < NSIG; sig++)
		if (mask & (1ULL << (sig - 1)))
			sigaddset(&gp->mask, sig);
	int sep = GUARD_ARGV_FIXED + (int)cmdc;
	if (argv[sep][0] != '\0' || !argv[GUARD_ARGV_FIXED][0])
		return EINVAL;
	argv[sep] = NULL; /* ends the command */
	gp->file = argv[GUARD_ARGV_FIXED];
	gp->argv = &argv[GUARD_ARGV_FIXED];
	/* The job's environment is ours (never the argv: /proc/PID/cmdline
	 * is readable by everyone). */
	gp->envp = environ;
	gp->path = argv[8];
	gp->out_fd = (int)out_fd;
	gp->ctl_fd = (int)ctl_fd;
	gp->parent = (pid_t)parent;
	gp->grace_ms = grace;
	long max_fd = sysconf(_SC_OPEN_MAX);
	gp->max_fd = max_fd > 0 && max_fd < 65536 ? (int)max_fd : 65536;
	return 0;
}
