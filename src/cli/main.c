/*
 * dbcron entry point: dispatches to subcommands and owns the shared CLI
 * helpers (database URL, error printing, exit statuses); the option loop
 * is opts.c's.
 * Owns the command's database URL text (the copy of --db, or what a URL
 * file held) until the command returns; the --db value in argv is
 * overwritten once copied, so the URL's password is not left readable in
 * /proc/PID/cmdline.
 */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/conf.h"
#include "core/alloc.h"
#include "core/text.h"
#include "dbcron/dbcron.h"
#include "exec/runas.h"
#include "store/store.h"

static const struct {
	const char *name;
	int (*fn)(int, char **);
	const char *help;
} commands[] = {
	{"cron", cli_cron, "cron next|check: compute and explain cron expressions"},
	{"init", cli_init, "create or upgrade the database schema"},
	{"job", cli_job, "job add|list|show|set|rename|pause|resume|delete|trigger|backfill|apply|export|import-crontab"},
	{"node", cli_node, "run a scheduler node until SIGINT/SIGTERM"},
	{"runs", cli_runs, "show the run log"},
	{"calendar", cli_calendar, "calendar add|list|show|delete: days a job can exclude"},
	{"audit", cli_audit, "show the audit trail: who changed which job, when, and how"},
	{"events", cli_events, "show reaction events and their delivery"},
	{"nodes", cli_nodes, "show scheduler nodes and their heartbeats"},
	{"tag", cli_tag, "tag set|list|delete: concurrency caps by tag"},
	{"lock", cli_lock, "run a command under a cluster-wide lease lock"},
	{"locks", cli_locks, "show lease locks"},
	{"serve", cli_serve, "serve the HTTP API without scheduling"},
	{"config", cli_config, "config show: the effective settings and where each came from"},
};

static void usage(FILE *f)
{
	fprintf(f, "usage: dbcron [--version] [--help] [--config FILE] [--db URL | --db-file PATH]\n"
		   "              COMMAND [ARGS...]\n\n"
		   "A distributed job scheduler on SQLite, PostgreSQL or MySQL/MariaDB.\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-7s %s\n", commands[i].name, commands[i].help);
	fprintf(f, "\nEvery database command takes --db URL (sqlite:PATH, postgresql://... or a\n"
		   "key=value conninfo) or --db-file PATH (a file holding the URL, so that it is not\n"
		   "on the command line); default $DBCRON_DB, else the file named by $DBCRON_DB_FILE,\n"
		   "else sqlite:./dbcron.db.  A --db value is blanked in the process's argv once read.\n"
		   "PostgreSQL passwords can also come from libpq's password file ($PGPASSFILE,\n"
		   "default ~/.pgpass).  SQLite syncs every commit (power-loss safe);\n"
		   "sqlite:PATH?synchronous=normal trades that for speed (docs/store.md).\n\n"
		   "--db, --db-file and --config FILE may also come before COMMAND.  Settings not\n"
		   "given as flags or in the environment come from the configuration file: --config\n"
		   "FILE, else $DBCRON_CONFIG, else /etc/dbcron/dbcron.conf if it exists ('key = value'\n"
		   "lines named as the long flags: db, db-file, node-id, workers, http, ...; see\n"
		   "`dbcron config show`).  `dbcron COMMAND --help` for more.\n");
}

/* The copy of --db's value and the text of a URL file: the command's
 * database URL, owned here and freed when the command returns. */
static char *db_flag_copy, *db_file_text;

void cli_db_set_url(cli_db *d, char *value)
{
	size_t n = strlen(value);
	char *copy = dbcron__strdup(value);
	/* out of memory: keep pointing at argv rather than lose the URL */
	if (!copy) {
		d->url = value;
		conf_set_flag(CONF_DB, value);
		return;
	}
	dbcron__free(db_flag_copy);
	db_flag_copy = copy;
	d->url = copy;
	conf_set_flag(CONF_DB, copy);
	memset(value, 0, n);
	memcpy(value, "***", n < 3 ? n : 3);
}

/* The URL in PATH (named by what in messages, never its content). */
static const char *read_db_file(const char *cmd, const char *what, const char *path,
				int *status)
{
	dbcron_err err = {0};
	char *url;
	int rc = store_url_file_read(path, &url, &err);
	if (rc) {
		fprintf(stderr, "dbcron %s: %s %s: %s\n", cmd, what, path, err.msg);
		*status = rc == DBCRON_ENOMEM ? CLI_EXIT_FAIL : CLI_EXIT_USAGE;
		return NULL;
	}
	dbcron__free(db_file_text);
	db_file_text = url;
	/* a node hands no job this file, whatever the job's env-file says */
	runas_secret_file_add(path);
	return url;
}

const char *cli_db_url_from(const char *cmd, const cli_db *d, conf_value *from, int *status)
{
	conf_key which;
	*status = CLI_EXIT_OK;
	if (d && d->url)
		conf_set_flag(CONF_DB, d->url);
	if (d && d->file)
		conf_set_flag(CONF_DB_FILE, d->file);
	if ((*status = conf_get_either(cmd, CONF_DB, CONF_DB_FILE, from, &which)))
		return NULL;
	if (!from->text)
		return "sqlite:./dbcron.db";
	/* only a flag can be empty here; it is no reason to fall back */
	if (!*from->text) {
		*status = cli_usage_error(cmd, "%s: empty %s", from->label,
					  which == CONF_DB ? "database URL" : "file name");
		return NULL;
	}
	if (which == CONF_DB)
		return from->text;
	return read_db_file(cmd, from->label, from->text, status);
}

const char *cli_db_url(const char *cmd, const cli_db *d, int *status)
{
	conf_value from;
	return cli_db_url_from(cmd, d, &from, status);
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

int cli_fail_in(const char *cmd, const dbcron_err *err)
{
	fprintf(stderr, "dbcron %s: %s\n", cmd,
		err->msg[0] ? err->msg : dbcron_strerror(err->code));
	return cli_status_for(err->code);
}

int cli_oom(const char *cmd)
{
	fprintf(stderr, "dbcron %s: out of memory\n", cmd);
	return CLI_EXIT_FAIL;
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

/* The commands that may create a SQLite database file (init, node and
 * lock open theirs elsewhere): the ones that add jobs.  Any other, above
 * all a read-only one, fails on a file that is not there instead of
 * leaving an empty one behind. */
static bool may_create(const char *cmd)
{
	static const char *const creators[] = {"job add", "job apply", "job import-crontab"};
	for (size_t i = 0; i < sizeof(creators) / sizeof(creators[0]); i++)
		if (strcmp(cmd, creators[i]) == 0)
			return true;
	return false;
}

/* Who the CLI's changes are by, for the audit trail: "cli:USER", the
 * real uid's name (its number when it has none), and " (sudo: NAME)"
 * when sudo started us, so that a change made as root still names the
 * person. */
static void cli_actor(store *s)
{
	char buf[1024], who[STORE_ACTOR_MAX];
	struct passwd pw, *res = NULL;
	uid_t uid = getuid();
	const char *sudo = getenv("SUDO_USER");
	if (getpwuid_r(uid, &pw, buf, sizeof(buf), &res) == 0 && res)
		dbcron__textf(who, sizeof(who), "cli:%s", res->pw_name);
	else
		dbcron__textf(who, sizeof(who), "cli:%lu", (unsigned long)uid);
	if (sudo && *sudo) {
		size_t n = strlen(who);
		dbcron__textf(who + n, sizeof(who) - n, " (sudo: %s)", sudo);
	}
	store_set_actor(s, who);
}

int cli_open_store(const char *cmd, const cli_db *d, store **out)
{
	dbcron_err err = {0};
	int status;
	const char *url = cli_db_url(cmd, d, &status);
	*out = NULL;
	if (!url)
		return status;
	int rc = store_open_flags(url, may_create(cmd) ? 0 : STORE_OPEN_NOCREATE, out, &err);
	if (rc == DBCRON_OK) {
		rc = store_check_schema(*out, &err);
		if (rc) {
			store_close(*out);
			*out = NULL;
		} else {
			cli_actor(*out);
		}
	}
	return rc ? cli_fail(&err) : 0;
}

/* "--NAME VALUE" or "--NAME=VALUE" at argv[*i]: the value, or NULL when
 * argv[*i] is not that option; *i moves past what was used. */
static char *opt_value(int argc, char **argv, int *i, const char *name, bool *missing)
{
	size_t n = strlen(name);
	const char *a = argv[*i];
	*missing = false;
	if (strncmp(a, name, n) != 0)
		return NULL;
	if (a[n] == '=')
		return argv[(*i)++] + n + 1;
	if (a[n])
		return NULL;
	if (*i + 1 >= argc) {
		*missing = true;
		return NULL;
	}
	*i += 2;
	return argv[*i - 1];
}

/* --db, --db-file and --config before the command; the index of the
 * command's name, or -1 after printing a usage error. */
static int global_options(int argc, char **argv)
{
	static cli_db global;
	int i = 1;
	while (i < argc && strncmp(argv[i], "--", 2) == 0 && argv[i][2]) {
		bool missing = false;
		char *v;
		if ((v = opt_value(argc, argv, &i, "--db-file", &missing)))
			conf_set_flag(CONF_DB_FILE, v);
		else if (!missing && (v = opt_value(argc, argv, &i, "--db", &missing)))
			cli_db_set_url(&global, v);
		else if (!missing && (v = opt_value(argc, argv, &i, "--config", &missing)))
			conf_set_path(v);
		else if (missing) {
			fprintf(stderr, "dbcron: option '%s' needs a value\n", argv[i]);
			return -1;
		} else {
			return i;
		}
	}
	return i;
}

int main(int argc, char **argv)
{
	store_sqlite_own_process();
	if (argc < 2) {
		usage(stderr);
		return CLI_EXIT_USAGE;
	}
	int first = global_options(argc, argv);
	if (first < 0)
		return CLI_EXIT_USAGE;
	if (first >= argc) {
		fprintf(stderr, "dbcron: no command after the options\n\n");
		usage(stderr);
		return CLI_EXIT_USAGE;
	}
	const char *name = argv[first];
	if (strcmp(name, "--version") == 0 || strcmp(name, "version") == 0) {
		printf("dbcron %s\n", DBCRON_VERSION);
		return 0;
	}
	if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0 || strcmp(name, "help") == 0) {
		usage(stdout);
		return 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(name, commands[i].name) == 0) {
			int status = conf_load_named(name);
			if (!status)
				status = commands[i].fn(argc - first, argv + first);
			dbcron__free(db_flag_copy);
			dbcron__free(db_file_text);
			conf_free();
			return status;
		}
	fprintf(stderr, "dbcron: unknown %s '%s'\n\n", name[0] == '-' ? "option" : "command", name);
	usage(stderr);
	return CLI_EXIT_USAGE;
}
