/*
 * `dbcron init`: create the schema, or upgrade it to this binary's
 * version, and look after the SQLite files' modes.
 *
 * Invariants kept: init is safe to run again (an up-to-date schema is
 * left as it is; the migrations are the store's); it opens the store
 * with store_open, not cli_open_store, whose check of the schema is the
 * very thing init is run to make pass; a SQLite
 * file holds every job's command line, environment and output, so
 * --group makes it 0640 for one group and otherwise a file others can
 * read is named on stderr, never silently left so.
 */
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app/app.h"
#include "cli/cli.h"

static void init_usage(FILE *f)
{
	fprintf(f, "usage: dbcron init [--group GROUP] [--format table|json] [--db URL | --db-file PATH]\n\n"
		   "Create the schema, or upgrade it to this binary's version.  Safe to run\n"
		   "again: an up-to-date schema is left as it is.\n\n"
		   "A SQLite database file (and its -wal and -shm files) is created 0600: it\n"
		   "holds every job's command line, environment and output.  init warns when\n"
		   "an existing one is readable by every user of the host.\n"
		   "  --group GROUP    make the SQLite files 0640 and owned by GROUP, for\n"
		   "                   readers in that group (dbcron runs, job list...)\n"
		   "  --format json    one line: {\"schema_version\", \"was\", \"files\"} (the files\n"
		   "                   --group changed)\n"
		   CLI_DB_HELP);
}

/* The database file and the two SQLite keeps beside it while in use. */
static const char *const db_file_suffixes[] = {"", "-wal", "-shm"};

/*
 * --group: the SQLite files 0640, owned by the group; else a warning for
 * each one others can read or write (files dbcron made are 0600; older
 * ones, or ones made by hand, may not be).  What --group changed is
 * printed, or with files (--format json) appended to it.  The exit status.
 */
static int init_file_mode(const char *path, const char *group, gid_t gid, json_t *files)
{
	char p[4096];
	struct stat st;

	for (size_t i = 0; i < sizeof(db_file_suffixes) / sizeof(db_file_suffixes[0]); i++) {
		int w = snprintf(p, sizeof(p), "%s%s", path, db_file_suffixes[i]);
		if (w < 0 || (size_t)w >= sizeof(p) || stat(p, &st) != 0)
			continue;
		if (group) {
			if (chown(p, (uid_t)-1, gid) != 0 || chmod(p, 0640) != 0) {
				fprintf(stderr, "dbcron init: %s: %s\n", p, strerror(errno));
				return CLI_EXIT_FAIL;
			}
			if (!files)
				printf("%s: mode 0640, group %s\n", p, group);
			else if (json_array_append_new(files, json_pack("{s:s,s:s,s:s}", "path", p,
									 "mode", "0640", "group",
									 group)))
				return cli_oom("init");
		} else if (st.st_mode & (S_IROTH | S_IWOTH)) {
			fprintf(stderr,
				"dbcron init: warning: %s is readable by every user of this host (mode %04o): "
				"it holds every job's command line, environment and output; chmod 600 it, "
				"or run dbcron init --group GROUP for 0640\n",
				p, (unsigned)(st.st_mode & 07777));
		}
	}
	return CLI_EXIT_OK;
}

/* --group, init's one option of its own. */
static int init_opt(void *ctx, int c, char *arg)
{
	(void)c;
	*(const char **)ctx = arg;
	return 0;
}

int cli_init(int argc, char **argv)
{
	static const struct option own[] = {
		{"group", required_argument, NULL, 'g'},
		{NULL, 0, NULL, 0},
	};
	const char *group = NULL;
	const cli_spec sp = {.cmd = "init",
			     .common = CLI_COMMON_DB | CLI_COMMON_FORMAT | CLI_COMMON_HELP,
			     .own = own, .usage = init_usage, .formats = cli_formats_table_json,
			     .own_opt = init_opt, .ctx = &group};
	cliopt o;
	cli_common cm;
	gid_t gid = 0;

	int status = cli_parse(&sp, &o, &cm, argc, argv);
	if (status >= 0 || (status = cliopt_no_pos(&o)))
		return status;
	if (group) {
		struct group *gr = getgrnam(group);
		if (!gr)
			return cli_usage_error("init", "--group '%s': no such group on this host", group);
		gid = gr->gr_gid;
	}

	store *s = NULL;
	dbcron_err err = {0};
	int from = 0, to = 0;
	const char *url = cli_db_url("init", &cm.db, &status);
	if (!url)
		return status;
	int rc = store_open(url, &s, &err);
	if (rc)
		return cli_fail(&err);
	const char *file = app_db_file(s);
	if (group && !file) {
		store_close(s);
		return cli_usage_error("init", "--group is for a SQLite file; this database is a "
					       "server's, whose files the server keeps");
	}
	rc = app_migrate(s, &from, &to, &err);
	if (rc) {
		store_close(s);
		return cli_fail(&err);
	}
	json_t *files = NULL;
	if (cli_format_of(cm.format) == CLI_FMT_JSON && !(files = json_array())) {
		store_close(s);
		return cli_oom("init");
	}
	if (!files)
		printf("schema at version %d (was %d)\n", to, from);
	status = file ? init_file_mode(file, group, gid, files) : CLI_EXIT_OK;
	if (files && !status &&
	    !cli_print_json_line(json_pack("{s:i,s:i,s:O}", "schema_version", to, "was", from,
					   "files", files)))
		status = cli_oom("init");
	json_decref(files);
	store_close(s);
	return status;
}
