/*
 * What a shell job runs as: its user and groups, its directory and umask,
 * and its environment (docs/security.md).  Internal to the library; the
 * shell executor uses all of it, the model its checks (so that `job add`,
 * `job apply` and the store refuse the same definitions), the CLI the
 * user lookup and the secret-file list.
 *
 * Three kinds of function, kept apart so that each can be tested alone:
 *  - checks of a definition: syntax only, no I/O, the same on every host;
 *  - look-ups on the host that runs them (users, groups, the env-file);
 *  - the environment built from those parts, a pure function.
 */
#ifndef DBCRON_EXEC_RUNAS_H
#define DBCRON_EXEC_RUNAS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "dbcron/error.h"
#include "dbcron/job.h"

/* PATH of a job that does not set one (systemd's default for services). */
#define RUNAS_DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
/* The shell a job's SHELL names, as cron sets it. */
#define RUNAS_SHELL "/bin/sh"
/* An env-file larger than this is refused (it is read at every run). */
#define RUNAS_ENV_FILE_MAX (256 * 1024)
/* At most this many --env entries per job. */
#define RUNAS_ENV_MAX 1000

/* ---- checks of a definition (no I/O) ---- */

/* A user or group name: 1-64 of [A-Za-z0-9._-], not starting with '-',
 * optionally ending in '$' (as useradd and Samba allow).  what is "user"
 * or "group", for the message. */
int runas_check_name(const char *what, const char *v, dbcron_err *err);
/* An absolute path shorter than PATH_MAX, for --cwd and --env-file. */
int runas_check_path(const char *what, const char *v, dbcron_err *err);
/* "KEY=VALUE": KEY of [A-Za-z_][A-Za-z0-9_]*, not starting with DBCRON_
 * (the run facts are the node's to set), VALUE valid UTF-8.  The message
 * names the key, never the value (it may be a secret). */
int runas_check_env(const char *kv, dbcron_err *err);
/* A umask: 0-0777. */
int runas_check_umask(long v, dbcron_err *err);
/* The job sets something only a process can have (user, group, cwd, env,
 * env-file, umask, inherit-env). */
bool runas_any(const dbcron_job *job);
/* The same but for the env-file: what only a child process can have. */
bool runas_any_process(const dbcron_job *job);
/* Every check above for the job's own fields; DBCRON_EINVAL naming the job. */
int runas_validate(const dbcron_job *job, dbcron_err *err);

/* ---- the scheduler's secrets ---- */

/*
 * Is kv ("NAME=...") one of the node's own settings or secrets, which no
 * job gets from the node's environment, whatever it asks: every DBCRON_*
 * (DBCRON_DB, DBCRON_DB_FILE, stale run facts...), libpq's password
 * variables (PGPASSWORD, PGPASSFILE, PGSERVICEFILE) and the MySQL
 * password the MySQL dialect reads (MYSQL_PWD).
 */
bool runas_secret_var(const char *kv);
/* Remember that this process read a secret from path (the database URL
 * file).  A job's env-file that is the same file is refused.  Safe from
 * any thread; a few entries are kept, later ones are dropped. */
void runas_secret_file_add(const char *path);
/* The same for another kind of secret (the HTTP API's token file):
 * what (static text, "API tokens") names it in the refusal. */
void runas_secret_file_add_as(const char *path, const char *what);
/* Is st (an open env-file) one of the remembered files, or libpq's
 * password file of this process ($PGPASSFILE, else ~/.pgpass)?  What the
 * file holds ("database secret", "API tokens"), NULL when it is neither. */
const char *runas_secret_file(const struct stat *st);

/* ---- look-ups on this host ---- */

/* Who the job runs as, resolved on the host that runs it.  Owns its
 * strings and groups; runas_ident_clear frees them. */
typedef struct runas_ident {
	bool switch_ids; /* ids differ from this process's: the child switches */
	uid_t uid;
	gid_t gid;
	gid_t *groups;   /* supplementary groups for setgroups (switch_ids only) */
	int ngroups;
	char *name;      /* USER and LOGNAME; NULL when this uid has no name */
	char *home;      /* HOME and the default cwd; NULL when unknown */
} runas_ident;

/*
 * job->user (else this process's user) and job->group (else the user's
 * primary group), with the user's supplementary groups.  where names this
 * host in messages ("node n1"): DBCRON_ENOTFOUND "user 'x' not found on
 * node n1", "group 'g' not found on node n1".  id is cleared first.
 */
int runas_ident_resolve(const dbcron_job *job, const char *where, runas_ident *id,
			dbcron_err *err);
void runas_ident_clear(runas_ident *id);
/* Does a user (what "user") or group (what "group") of this name exist
 * on this host?  DBCRON_ENOTFOUND when not, DBCRON_EIO when the look-up
 * itself failed. */
int runas_lookup(const char *what, const char *name, dbcron_err *err);

/*
 * The job's env-file as text (owned by the caller, NUL-terminated), read
 * by this process for the job: a regular file of at most
 * RUNAS_ENV_FILE_MAX bytes; when the job runs as another user, one that
 * user may read by its mode bits (so that the node, root, hands no job a
 * file the job could not open itself); never a file this process keeps a
 * secret in (runas_secret_file).  Messages name the path, never the
 * content.
 */
int runas_env_file_read(const char *path, const runas_ident *id, char **text,
			dbcron_err *err);

/* ---- the environment ---- */

/* A NULL-terminated "KEY=VALUE" array; owns its strings. */
typedef struct runas_env {
	char **v;
	size_t n, cap;
} runas_env;

typedef struct runas_env_src {
	const dbcron_job *job;     /* env, inherit_env, env_file (for messages) */
	const runas_ident *id;     /* name, home */
	char *const *node_env;     /* this process's environ (inherit_env only) */
	const char *file_text;     /* the env-file's content, or NULL */
	char *const *facts;        /* the run facts, "DBCRON_JOB=..." (may be NULL) */
} runas_env_src;

/*
 * The job's environment, each later step replacing a variable of the same
 * name: the node's environment without its secrets (runas_secret_var)
 * when the job asks for it; HOME, LOGNAME and USER of the job's user;
 * SHELL=/bin/sh and PATH=RUNAS_DEFAULT_PATH unless set already; the
 * env-file's lines (KEY=VALUE, blank lines and # comments skipped, the
 * value verbatim to the end of its line); the job's own env; the run
 * facts.  Errors name the env-file's line, never its content.  out is
 * initialised here and freed with runas_env_free, also after a failure.
 */
int runas_env_build(const runas_env_src *src, runas_env *out, dbcron_err *err);
/* The env-file's variables alone (text read by runas_env_file_read, path
 * for messages), by the same line rule; out as runas_env_build's. */
int runas_env_file_vars(const char *path, const char *text, runas_env *out, dbcron_err *err);
/* The value of name in e, or NULL. */
const char *runas_env_get(const runas_env *e, const char *name);
void runas_env_free(runas_env *e);

#endif
