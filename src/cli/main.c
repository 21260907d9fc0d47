/*
 * dbcron entry point: dispatches to subcommands and owns the shared CLI
 * helpers (database URL, error printing, exit statuses, the option loop).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "dbcron/dbcron.h"

static const struct {
	const char *name;
	int (*fn)(int, char **);
	const char *help;
} commands[] = {
	{"cron", cli_cron, "cron next|check: compute and explain cron expressions"},
	{"init", cli_init, "create or upgrade the database schema"},
	{"job", cli_job, "job add|list|show|pause|resume|delete|trigger|apply"},
	{"node", cli_node, "run a scheduler node until SIGINT/SIGTERM"},
	{"runs", cli_runs, "show the run log"},
	{"nodes", cli_nodes, "show scheduler nodes and their heartbeats"},
	{"lock", cli_lock, "run a command under a cluster-wide lease lock"},
	{"locks", cli_locks, "show lease locks"},
};

static void usage(FILE *f)
{
	fprintf(f, "usage: dbcron [--version] [--help] COMMAND [ARGS...]\n\n"
		   "A distributed job scheduler on SQLite or PostgreSQL.\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-7s %s\n", commands[i].name, commands[i].help);
	fprintf(f, "\nEvery database command takes --db URL (sqlite:PATH or postgresql://...;\n"
		   "default $DBCRON_DB, else sqlite:./dbcron.db).  `dbcron COMMAND --help` for more.\n");
}

const char *cli_db_url(const char *flag)
{
	if (flag && *flag)
		return flag;
	const char *env = getenv("DBCRON_DB");
	if (env && *env)
		return env;
	return "sqlite:./dbcron.db";
}

int cli_status_for(int code)
{
	switch (code) {
	case DBCRON_OK:
		return CLI_EXIT_OK;
	case DBCRON_EINVAL:
	case DBCRON_EPARSE:
	case DBCRON_ENOTFOUND:
	case DBCRON_EEXISTS:
	case DBCRON_ETZ:
		return CLI_EXIT_USAGE;
	case DBCRON_ELOCKED:
		return CLI_EXIT_LOCKED;
	case DBCRON_EFENCED:
		return CLI_EXIT_LOST;
	default:
		return CLI_EXIT_FAIL;
	}
}

int cli_fail(const dbcron_err *err)
{
	fprintf(stderr, "dbcron: %s\n",
		err->msg[0] ? err->msg : dbcron_strerror(err->code));
	return cli_status_for(err->code);
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "dbcron %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (see dbcron %s --help)\n", cmd);
	return CLI_EXIT_USAGE;
}

int cli_open_store(const char *url, store **out)
{
	dbcron_err err = {0};
	int rc = store_open(url, out, &err);
	if (rc == DBCRON_OK) {
		rc = store_check_schema(*out, &err);
		if (rc) {
			store_close(*out);
			*out = NULL;
		}
	}
	return rc ? cli_fail(&err) : 0;
}

void cliopt_reset(void)
{
	/* 0 makes GNU getopt reinitialise, also its "+" ordering */
	optind = 0;
	opterr = 0;
}

int cliopt_next(cliopt *o, int argc, char **argv, const char *optstring,
		const struct option *longs)
{
	for (;;) {
		int prev = optind ? optind : 1;
		if (o->dashdash || prev >= argc)
			return -1;
		int c = getopt_long(argc, argv, optstring, longs, NULL);
		if (c == -1) {
			/* getopt swallows "--"; the caller wants what follows */
			if (optind == prev + 1 && strcmp(argv[prev], "--") == 0) {
				o->dashdash = true;
				o->rest = argv + optind;
				o->nrest = argc - optind;
				optind = argc;
				return -1;
			}
			if (optind >= argc)
				return -1;
			if (o->npos < CLIOPT_MAXPOS)
				o->pos[o->npos] = argv[optind];
			o->npos++;
			optind++;
			continue;
		}
		if (c == '?') {
			if (optopt)
				cli_usage_error(o->cmd, "unknown option '-%c'", optopt);
			else
				cli_usage_error(o->cmd, "unknown option '%s'", argv[optind - 1]);
			return '?';
		}
		if (c == ':') {
			cli_usage_error(o->cmd, "option '%s' needs a value", argv[optind - 1]);
			return '?';
		}
		return c;
	}
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return CLI_EXIT_USAGE;
	}
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
		printf("dbcron %s\n", DBCRON_VERSION);
		return 0;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(argv[1], commands[i].name) == 0)
			return commands[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "dbcron: unknown command '%s'\n\n", argv[1]);
	usage(stderr);
	return CLI_EXIT_USAGE;
}
