/*
 * What a shell job runs as (runas.h): the checks of the definition, the
 * look-ups of its user and groups on the host that runs it, its env-file,
 * and its environment.
 *
 * Owns the list of files this process keeps secrets in (a few dev/inode
 * pairs behind a mutex, filled by runas_secret_file_add: the database URL
 * file, the HTTP API's token file), and nothing else
 * beyond what each call returns.  The list is process-wide, not per node:
 * a job of any node is a child of this process and could open any of them
 * (include/dbcron/db.h, dbcron_db_open_file).
 *
 * Invariants:
 *  - nothing of the node's environment reaches a job unless the job asks
 *    (inherit_env), and then never a variable runas_secret_var names;
 *  - the node, which may be root, reads an env-file for a job only when
 *    the job's own user could read it by its mode bits, and never one of
 *    the files it keeps its own secrets in;
 *  - no message quotes an env value or an env-file's content: either may
 *    be a password.  A variable's name is quoted only once it is known to
 *    be a name (a URL pasted into an env-file is not).
 *
 * Costs admitted: the env-file check reads mode bits, not ACLs, and not
 * the search permission of the directories above the file.
 */
#define _GNU_SOURCE /* GNU strerror_r, getgrouplist */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pthread.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/text.h"
#include "core/alloc.h"
#include "exec/runas.h"

/* ---- checks ---- */

static bool name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '_' || c == '-';
}

int runas_check_name(const char *what, const char *v, dbcron_err *err)
{
	size_t n = v ? strlen(v) : 0;
	bool ok = n > 0 && n <= 64 && v[0] != '-';
	for (size_t i = 0; ok && i < n; i++)
		ok = name_char(v[i]) || (v[i] == '$' && i == n - 1 && n > 1);
	if (ok)
		return DBCRON_OK;
	if (n > 64 || !v)
		return dbcron_err_set(err, DBCRON_EINVAL, "expected a %s name of 1-64 characters",
				      what);
	return dbcron_err_set(err, DBCRON_EINVAL,
			      "'%s': expected a %s name (letters, digits, '.', '_' and '-')", v,
			      what);
}

int runas_check_path(const char *what, const char *v, dbcron_err *err)
{
	if (!v || v[0] != '/')
		return dbcron_err_set(err, DBCRON_EINVAL, "'%s': expected an absolute path for the %s",
				      v ? v : "", what);
	if (strlen(v) >= PATH_MAX)
		return dbcron_err_set(err, DBCRON_EINVAL, "the %s is longer than %d bytes", what,
				      PATH_MAX - 1);
	return DBCRON_OK;
}

/* Length of the variable name at the start of s: [A-Za-z_][A-Za-z0-9_]*. */
static size_t var_name_len(const char *s)
{
	size_t i = 0;
	while ((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || s[i] == '_' ||
	       (i > 0 && s[i] >= '0' && s[i] <= '9'))
		i++;
	return i;
}

static bool utf8_valid(const unsigned char *s)
{
	while (*s) {
		unsigned char b = *s;
		size_t len = b < 0x80 ? 1 : b >= 0xc2 && b <= 0xdf ? 2 : b >= 0xe0 && b <= 0xef ? 3
			   : b >= 0xf0 && b <= 0xf4 ? 4 : 0;
		if (!len)
			return false;
		for (size_t k = 1; k < len; k++)
			if ((s[k] & 0xc0) != 0x80)
				return false;
		/* overlong forms, surrogates and > U+10FFFF */
		if ((len == 3 && ((b == 0xe0 && s[1] < 0xa0) || (b == 0xed && s[1] >= 0xa0))) ||
		    (len == 4 && ((b == 0xf0 && s[1] < 0x90) || (b == 0xf4 && s[1] >= 0x90))))
			return false;
		s += len;
	}
	return true;
}

int runas_check_env(const char *kv, dbcron_err *err)
{
	size_t n = kv ? var_name_len(kv) : 0;
	if (!kv || !strchr(kv, '='))
		return dbcron_err_set(err, DBCRON_EINVAL, "expected KEY=VALUE");
	if (n == 0 || kv[n] != '=')
		return dbcron_err_set(err, DBCRON_EINVAL,
				      "expected KEY=VALUE with a KEY of letters, digits and '_' "
				      "that does not start with a digit");
	if (strncmp(kv, "DBCRON_", 7) == 0)
		return dbcron_err_set(err, DBCRON_EINVAL,
				      "'%.*s': names starting with DBCRON_ are set by the node",
				      (int)n, kv);
	if (!utf8_valid((const unsigned char *)kv + n + 1))
		return dbcron_err_set(err, DBCRON_EINVAL, "'%.*s': the value is not valid UTF-8",
				      (int)n, kv);
	return DBCRON_OK;
}

int runas_check_umask(long v, dbcron_err *err)
{
	if (v < 0 || v > 0777)
		return dbcron_err_set(err, DBCRON_EINVAL, "%lo is out of range 0-777 (octal)",
				      v < 0 ? 0L : v);
	return DBCRON_OK;
}

bool runas_any_process(const dbcron_job *job)
{
	return job->user || job->group || job->cwd || job->envc > 0 || job->umask >= 0 ||
	       job->inherit_env;
}

bool runas_any(const dbcron_job *job)
{
	return runas_any_process(job) || job->env_file;
}

static bool same_var(const char *a, const char *b)
{
	size_t n = strcspn(a, "=");
	return strncmp(a, b, n) == 0 && b[n] == '=';
}

int runas_validate(const dbcron_job *job, dbcron_err *err)
{
	const char *n = job->name ? job->name : "";
	char why[sizeof(err->msg)];
	dbcron_err e = {0};
	const char *key = NULL;
	int rc = DBCRON_OK;

	if (job->user && (rc = runas_check_name("user", job->user, &e)))
		key = "user";
	else if (job->group && (rc = runas_check_name("group", job->group, &e)))
		key = "group";
	else if (job->cwd && (rc = runas_check_path("working directory", job->cwd, &e)))
		key = "cwd";
	else if (job->env_file && (rc = runas_check_path("env-file", job->env_file, &e)))
		key = "env-file";
	else if (job->umask != -1 && (rc = runas_check_umask(job->umask, &e)))
		key = "umask";
	else if (job->envc < 0 || job->envc > RUNAS_ENV_MAX || (job->envc && !job->env))
		return dbcron_err_set(err, DBCRON_EINVAL, "job '%s': env: more than %d variables",
				      n, RUNAS_ENV_MAX);
	for (int i = 0; !rc && i < job->envc; i++) {
		if ((rc = runas_check_env(job->env[i], &e))) {
			key = "env";
			break;
		}
		for (int k = 0; k < i; k++) {
			if (same_var(job->env[k], job->env[i])) {
				key = "env";
				rc = dbcron_err_set(&e, DBCRON_EINVAL, "'%.*s' is given twice",
						    (int)strcspn(job->env[i], "="), job->env[i]);
				break;
			}
		}
	}
	if (!rc)
		return DBCRON_OK;
	dbcron__textf(why, sizeof(why), "%s", e.msg);
	return dbcron_err_set(err, rc, "job '%s': %s%s%s", n, key, why[0] == '\'' ? " " : ": ",
			      why);
}

/* ---- the scheduler's secrets ---- */

bool runas_secret_var(const char *kv)
{
	static const char *const names[] = {"PGPASSWORD", "PGPASSFILE", "PGSERVICEFILE",
					    "MYSQL_PWD"};
	if (strncmp(kv, "DBCRON_", 7) == 0)
		return true;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		size_t n = strlen(names[i]);
		if (strncmp(kv, names[i], n) == 0 && (kv[n] == '=' || kv[n] == '\0'))
			return true;
	}
	return false;
}

#define SECRET_FILES 8
static pthread_mutex_t secret_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	dev_t dev;
	ino_t ino;
	const char *what; /* static text for the refusal: "database secret" */
} secret_files[SECRET_FILES];
static size_t n_secret_files;

void runas_secret_file_add_as(const char *path, const char *what)
{
	struct stat st;
	if (!path || stat(path, &st) != 0)
		return;
	dev_t dev = st.st_dev;
	ino_t ino = st.st_ino;
	pthread_mutex_lock(&secret_lock);
	if (n_secret_files < SECRET_FILES) {
		size_t i = n_secret_files++;
		secret_files[i].dev = dev;
		secret_files[i].ino = ino;
		secret_files[i].what = what;
	}
	pthread_mutex_unlock(&secret_lock);
}

void runas_secret_file_add(const char *path)
{
	runas_secret_file_add_as(path, "database secret");
}

static bool same_file(const struct stat *st, const char *dir, const char *name)
{
	char path[PATH_MAX];
	struct stat o;
	int w = snprintf(path, sizeof(path), "%s%s%s", dir, name ? "/" : "", name ? name : "");
	return w > 0 && (size_t)w < sizeof(path) && stat(path, &o) == 0 &&
	       o.st_dev == st->st_dev && o.st_ino == st->st_ino;
}

const char *runas_secret_file(const struct stat *st)
{
	const char *hit = NULL;
	pthread_mutex_lock(&secret_lock);
	for (size_t i = 0; i < n_secret_files && !hit; i++)
		if (secret_files[i].dev == st->st_dev && secret_files[i].ino == st->st_ino)
			hit = secret_files[i].what;
	pthread_mutex_unlock(&secret_lock);
	if (hit)
		return hit;
	/* libpq's password file, where libpq would look for it */
	const char *pgpass = getenv("PGPASSFILE"), *home = getenv("HOME");
	if (pgpass && *pgpass)
		return same_file(st, pgpass, NULL) ? "database secret" : NULL;
	if (home && *home && same_file(st, home, ".pgpass"))
		return "database secret";
	struct passwd pw, *pp = NULL;
	char buf[4096];
	if (getpwuid_r(geteuid(), &pw, buf, sizeof(buf), &pp) == 0 && pp && pp->pw_dir &&
	    same_file(st, pp->pw_dir, ".pgpass"))
		return "database secret";
	return NULL;
}

/* ---- users and groups ---- */

/* getpwnam_r/getgrnam_r need a buffer whose size only the call knows. */
#define LOOKUP_BUF_MAX (1 << 20)

static int lookup_user(const char *name, uid_t uid, struct passwd *pw, char **buf,
		       struct passwd **res)
{
	size_t len = 4096;
	int e;
	*res = NULL;
	for (;;) {
		char *b = dbcron__realloc(*buf, len);
		if (!b)
			return ENOMEM;
		*buf = b;
		e = name ? getpwnam_r(name, pw, b, len, res) : getpwuid_r(uid, pw, b, len, res);
		if (e != ERANGE || len >= LOOKUP_BUF_MAX)
			return e;
		len *= 2;
	}
}

static int lookup_group(const char *name, struct group *gr, char **buf, struct group **res)
{
	size_t len = 4096;
	int e;
	*res = NULL;
	for (;;) {
		char *b = dbcron__realloc(*buf, len);
		if (!b)
			return ENOMEM;
		*buf = b;
		e = getgrnam_r(name, gr, b, len, res);
		if (e != ERANGE || len >= LOOKUP_BUF_MAX)
			return e;
		len *= 2;
	}
}

/* "not found" is no entry and no error; some NSS modules say ENOENT. */
static bool lookup_missing(int e)
{
	return e == 0 || e == ENOENT || e == ESRCH || e == EBADF || e == EPERM;
}

int runas_lookup(const char *what, const char *name, dbcron_err *err)
{
	char *buf = NULL, eb[128];
	bool user = strcmp(what, "user") == 0;
	struct passwd pw, *pp = NULL;
	struct group gr, *gp = NULL;
	int e = user ? lookup_user(name, 0, &pw, &buf, &pp) : lookup_group(name, &gr, &buf, &gp);
	bool found = user ? pp != NULL : gp != NULL;
	dbcron__free(buf);
	if (found)
		return DBCRON_OK;
	if (lookup_missing(e))
		return dbcron_err_set(err, DBCRON_ENOTFOUND, "%s '%s' not found", what, name);
	return dbcron_err_set(err, e == ENOMEM ? DBCRON_ENOMEM : DBCRON_EIO,
			      "looking up %s '%s': %s", what, name, strerror_r(e, eb, sizeof(eb)));
}

void runas_ident_clear(runas_ident *id)
{
	dbcron__free(id->groups);
	dbcron__free(id->name);
	dbcron__free(id->home);
	memset(id, 0, sizeof(*id));
}

/* The supplementary groups of name with gid among them (initgroups'
 * list), or gid alone for a user without a name. */
static int group_list(runas_ident *id)
{
	int n = 32;
	for (int tries = 0; tries < 8; tries++) {
		gid_t *g = dbcron__realloc(id->groups, (size_t)n * sizeof(gid_t));
		if (!g)
			return ENOMEM;
		id->groups = g;
		if (!id->name) {
			g[0] = id->gid;
			id->ngroups = 1;
			return 0;
		}
		int got = n;
		if (getgrouplist(id->name, id->gid, g, &got) >= 0) {
			id->ngroups = got;
			return 0;
		}
		if (got <= n) /* failed without saying how many: room for more */
			got = n * 2;
		n = got;
	}
	return E2BIG;
}

int runas_ident_resolve(const dbcron_job *job, const char *where, runas_ident *id,
			dbcron_err *err)
{
	struct passwd pw, *pp = NULL;
	struct group gr, *gp = NULL;
	char *buf = NULL, eb[128];
	int e, rc = DBCRON_OK;

	memset(id, 0, sizeof(*id));
	e = lookup_user(job->user, geteuid(), &pw, &buf, &pp);
	if (job->user && !pp) {
		if (lookup_missing(e))
			rc = dbcron_err_set(err, DBCRON_ENOTFOUND, "user '%s' not found on %s",
					    job->user, where);
		else
			rc = dbcron_err_set(err, DBCRON_EIO, "looking up user '%s' on %s: %s",
					    job->user, where, strerror_r(e, eb, sizeof(eb)));
		goto out_free;
	}
	id->uid = pp ? pp->pw_uid : geteuid();
	/* without --user the node's own ids stand, whatever passwd says */
	id->gid = job->user ? pp->pw_gid : getegid();
	if ((pp && !(id->name = dbcron__strdup(pp->pw_name))) ||
	    (pp && pp->pw_dir && *pp->pw_dir && !(id->home = dbcron__strdup(pp->pw_dir))))
		goto out_nomem;
	if (job->group) {
		e = lookup_group(job->group, &gr, &buf, &gp);
		if (!gp) {
			if (lookup_missing(e))
				rc = dbcron_err_set(err, DBCRON_ENOTFOUND, "group '%s' not found on %s",
						    job->group, where);
			else
				rc = dbcron_err_set(err, DBCRON_EIO, "looking up group '%s' on %s: %s",
						    job->group, where, strerror_r(e, eb, sizeof(eb)));
			goto out_free;
		}
		id->gid = gp->gr_gid;
	}
	/* Already the ids asked for: nothing to switch, so a node that is not
	 * root can still run a job as its own user. */
	id->switch_ids = (job->user || job->group) &&
			 (id->uid != geteuid() || id->gid != getegid());
	if (id->switch_ids && (e = group_list(id))) {
		if (e == ENOMEM)
			goto out_nomem;
		rc = dbcron_err_set(err, DBCRON_EIO, "user '%s' on %s: too many groups",
				    id->name ? id->name : "?", where);
		goto out_free;
	}
	goto out_free;
out_nomem:
	rc = dbcron_err_set(err, DBCRON_ENOMEM, "out of memory looking up the job's user");
out_free:
	dbcron__free(buf);
	if (rc)
		runas_ident_clear(id);
	return rc;
}

/* ---- the env-file ---- */

/* Could id read a file of this owner and mode?  The kernel's rule for
 * the classes (owner, group, other) without ACLs; root reads anything. */
static bool may_read(const struct stat *st, const runas_ident *id)
{
	if (id->uid == 0)
		return true;
	if (st->st_uid == id->uid)
		return (st->st_mode & S_IRUSR) != 0;
	bool member = st->st_gid == id->gid;
	for (int i = 0; !member && i < id->ngroups; i++)
		member = id->groups[i] == st->st_gid;
	if (member)
		return (st->st_mode & S_IRGRP) != 0;
	return (st->st_mode & S_IROTH) != 0;
}

int runas_env_file_read(const char *path, const runas_ident *id, char **text,
			dbcron_err *err)
{
	char eb[128];
	struct stat st;
	char *buf = NULL;
	size_t n = 0;
	int rc;

	*text = NULL;
	/* O_NONBLOCK: a FIFO in its place must not hang the worker */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return dbcron_err_set(err, errno == ENOENT ? DBCRON_ENOTFOUND : DBCRON_EIO,
				      "env-file '%s': %s", path,
				      strerror_r(errno, eb, sizeof(eb)));
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		rc = dbcron_err_set(err, DBCRON_EINVAL, "env-file '%s': not a regular file", path);
		goto out_close;
	}
	const char *secret = runas_secret_file(&st);
	if (secret) {
		rc = dbcron_err_set(err, DBCRON_EINVAL,
				    "env-file '%s': the node keeps its own %s there; no job gets it",
				    path, secret);
		goto out_close;
	}
	if (id->switch_ids && !may_read(&st, id)) {
		rc = dbcron_err_set(err, DBCRON_EINVAL,
				    "env-file '%s': user '%s' may not read it (owner uid %u, mode %04o)",
				    path, id->name ? id->name : "?", (unsigned)st.st_uid,
				    (unsigned)(st.st_mode & 07777));
		goto out_close;
	}
	if (st.st_size > RUNAS_ENV_FILE_MAX) {
		rc = dbcron_err_set(err, DBCRON_EINVAL, "env-file '%s': larger than %d KiB", path,
				    RUNAS_ENV_FILE_MAX / 1024);
		goto out_close;
	}
	if (!(buf = dbcron__malloc(RUNAS_ENV_FILE_MAX + 1))) {
		rc = dbcron_err_set(err, DBCRON_ENOMEM, "out of memory reading env-file '%s'", path);
		goto out_close;
	}
	while (n <= RUNAS_ENV_FILE_MAX) {
		ssize_t got = read(fd, buf + n, RUNAS_ENV_FILE_MAX + 1 - n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			rc = dbcron_err_set(err, DBCRON_EIO, "env-file '%s': %s", path,
					    strerror_r(errno, eb, sizeof(eb)));
			goto out_free;
		}
		if (got == 0)
			break;
		n += (size_t)got;
	}
	if (n > RUNAS_ENV_FILE_MAX) { /* it grew after the fstat */
		rc = dbcron_err_set(err, DBCRON_EINVAL, "env-file '%s': larger than %d KiB", path,
				    RUNAS_ENV_FILE_MAX / 1024);
		goto out_free;
	}
	if (memchr(buf, '\0', n)) {
		rc = dbcron_err_set(err, DBCRON_EINVAL, "env-file '%s': holds a NUL byte", path);
		goto out_free;
	}
	buf[n] = '\0';
	*text = buf;
	close(fd);
	return DBCRON_OK;
out_free:
	dbcron__free(buf);
out_close:
	close(fd);
	return rc;
}

/* ---- the environment ---- */

void runas_env_free(runas_env *e)
{
	for (size_t i = 0; i < e->n; i++)
		dbcron__free(e->v[i]);
	dbcron__free(e->v);
	memset(e, 0, sizeof(*e));
}

static ssize_t env_find(const runas_env *e, const char *kv, size_t klen)
{
	for (size_t i = 0; i < e->n; i++)
		if (strncmp(e->v[i], kv, klen) == 0 && e->v[i][klen] == '=')
			return (ssize_t)i;
	return -1;
}

const char *runas_env_get(const runas_env *e, const char *name)
{
	ssize_t i = env_find(e, name, strlen(name));
	return i < 0 ? NULL : e->v[i] + strlen(name) + 1;
}

/* Set kv[0..len) ("NAME=value"), replacing NAME unless keep is set and it
 * exists.  -1 when out of memory. */
static int env_setn(runas_env *e, const char *kv, size_t len, bool keep)
{
	size_t klen = strcspn(kv, "=");
	ssize_t at = env_find(e, kv, klen);
	if (at >= 0 && keep)
		return 0;
	char *s = dbcron__malloc(len + 1);
	if (!s)
		return -1;
	memcpy(s, kv, len);
	s[len] = '\0';
	if (at >= 0) {
		dbcron__free(e->v[at]);
		e->v[at] = s;
		return 0;
	}
	/* one spare slot for the NULL at the end */
	if (dbcron__grow((void **)&e->v, &e->cap, e->n + 2, sizeof(char *))) {
		dbcron__free(s);
		return -1;
	}
	e->v[e->n++] = s;
	e->v[e->n] = NULL;
	return 0;
}

static int env_set(runas_env *e, const char *kv, bool keep)
{
	return env_setn(e, kv, strlen(kv), keep);
}

static int env_put(runas_env *e, const char *name, const char *value, bool keep)
{
	size_t a = strlen(name), b = strlen(value);
	char *s = dbcron__malloc(a + b + 2);
	if (!s)
		return -1;
	memcpy(s, name, a);
	s[a] = '=';
	memcpy(s + a + 1, value, b + 1);
	int r = env_set(e, s, keep);
	dbcron__free(s);
	return r;
}

/* The env-file's lines into e. */
static int env_file_lines(runas_env *e, const char *path, const char *text, dbcron_err *err)
{
	int lineno = 0;
	for (const char *p = text; *p;) {
		const char *end = strchr(p, '\n');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		const char *next = end ? end + 1 : p + len;
		lineno++;
		if (len && p[len - 1] == '\r')
			len--;
		while (len && (*p == ' ' || *p == '\t')) {
			p++;
			len--;
		}
		if (!len || *p == '#') {
			p = next;
			continue;
		}
		char *line = dbcron__malloc(len + 1);
		if (!line)
			return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory");
		memcpy(line, p, len);
		line[len] = '\0';
		dbcron_err why = {0};
		int rc = runas_check_env(line, &why);
		if (!rc && env_set(e, line, false))
			rc = dbcron_err_set(&why, DBCRON_ENOMEM, "out of memory");
		dbcron__free(line);
		if (rc)
			return dbcron_err_set(err, rc, "env-file '%s' line %d: %s", path, lineno,
					      why.msg);
		p = next;
	}
	return DBCRON_OK;
}

int runas_env_file_vars(const char *path, const char *text, runas_env *out, dbcron_err *err)
{
	memset(out, 0, sizeof(*out));
	int rc = env_file_lines(out, path, text, err);
	if (!rc && !out->v && dbcron__grow((void **)&out->v, &out->cap, 1, sizeof(char *)))
		rc = dbcron_err_set(err, DBCRON_ENOMEM, "out of memory");
	if (!rc)
		out->v[out->n] = NULL;
	return rc;
}

int runas_env_build(const runas_env_src *src, runas_env *out, dbcron_err *err)
{
	const dbcron_job *job = src->job;
	const runas_ident *id = src->id;
	int rc;

	memset(out, 0, sizeof(*out));
	if (job->inherit_env)
		for (char *const *p = src->node_env; p && *p; p++)
			if (strchr(*p, '=') && !runas_secret_var(*p) && env_set(out, *p, false))
				goto out_nomem;
	/* who the job is, also over an inherited HOME: a job as nobody must
	 * not be told it is root */
	if ((id->home && env_put(out, "HOME", id->home, false)) ||
	    (id->name && (env_put(out, "LOGNAME", id->name, false) ||
			  env_put(out, "USER", id->name, false))) ||
	    env_put(out, "SHELL", RUNAS_SHELL, true) ||
	    env_put(out, "PATH", RUNAS_DEFAULT_PATH, true))
		goto out_nomem;
	if (src->file_text &&
	    (rc = env_file_lines(out, job->env_file ? job->env_file : "?", src->file_text, err)))
		return rc;
	for (int i = 0; i < job->envc; i++)
		if (env_set(out, job->env[i], false))
			goto out_nomem;
	for (char *const *p = src->facts; p && *p; p++)
		if (env_set(out, *p, false))
			goto out_nomem;
	if (!out->v && dbcron__grow((void **)&out->v, &out->cap, 1, sizeof(char *)))
		goto out_nomem;
	out->v[out->n] = NULL;
	return DBCRON_OK;
out_nomem:
	return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory building the environment");
}
