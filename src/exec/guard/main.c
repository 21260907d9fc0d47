/*
 * dbcron-guard: the guard of one job (src/exec/guard.c) as a program of
 * its own, so that proc_spawn() can posix_spawn it instead of forking the
 * whole spawner for every run; or, with "serve", the supervisor that
 * guards every run of a spawner that closes the fds it inherits.  Not for people: its argv is the encoding
 * guard.h describes, its environment is the job's (never in the argv,
 * which every user can read), and it starts with every
 * signal blocked.  It is built against the C library only and without
 * sanitizers, because it is exec'd once per shell run.
 *
 * Owns nothing beyond what guard__main() does.  When the argv cannot be
 * decoded it says so on stderr (the spawner's log) and reports the errno
 * on the control fd if it can find one, so the run fails with a reason
 * instead of hanging.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec/guard.h"

/* The job's supplementary groups: as many as Linux allows (NGROUPS_MAX),
 * in memory that costs nothing until a job has that many. */
#define MAX_GROUPS 65536
static gid_t groups[MAX_GROUPS];

/* dbcron-guard PROTO serve SOCK_FD PARENT: the supervisor of many runs
 * (guard.h).  It starts with every signal blocked and the spawner's
 * ignored signals still ignored (an exec keeps those): all go back to
 * their default here, once, so that its leaders need not.  Fds 0-2 are
 * made to exist, so that no fd it receives lands on them. */
static int serve(int argc, char **argv)
{
	char *end;
	long sock = strtol(argv[3], &end, 10);
	long parent = argc == 5 && *end == '\0' ? strtol(argv[4], &end, 10) : -1;
	if (*end != '\0' || sock < 3 || sock > 65535 || parent < 1) {
		fprintf(stderr, "%s: malformed arguments (it is started by dbcron, not by hand)\n",
			GUARD_PROGRAM);
		return 2;
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			sigaction(sig, &sa, NULL);
	for (int fd = 0; fd <= 2; fd++)
		if (fcntl(fd, F_GETFD) < 0 && open("/dev/null", O_RDWR) < 0)
			return 2;
	guard__serve((int)sock, (pid_t)parent);
}

int main(int argc, char **argv)
{
	guard_plan gp;
	if (argc > 3 && strcmp(argv[1], GUARD_PROTO) == 0 && strcmp(argv[2], GUARD_SERVE) == 0)
		return serve(argc, argv);
	int e = guard__parse(argc, argv, &gp, groups, MAX_GROUPS);

	if (e == 0)
		guard__main(&gp);
	if (e == EPROTO)
		fprintf(stderr, "%s: asked for protocol '%s', this one speaks %s "
			"(a %s from another dbcron build?)\n",
			GUARD_PROGRAM, argc > 1 ? argv[1] : "", GUARD_PROTO, GUARD_PROGRAM);
	else
		fprintf(stderr, "%s: malformed arguments (it is started by dbcron, not by hand)\n",
			GUARD_PROGRAM);
	char *end;
	long fd = argc > 4 ? strtol(argv[4], &end, 10) : -1;
	if (fd > 2 && fd < 65536 && argc > 4 && *end == '\0') {
		guard_msg msg = {.pid = GUARD_BAD_ARGV, .err = e};
		if (write((int)fd, &msg, sizeof(msg)) < 0)
			return 2;
	}
	return 2;
}
