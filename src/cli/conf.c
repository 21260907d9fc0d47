/*
 * The configuration file and the precedence of settings: a flag, else the
 * key's environment variable, else the file, else the built-in default
 * (which the command that uses a key knows; this module only says "unset").
 *
 * Owns the file's text and the labels of its values from the first
 * conf_get that needs the file until conf_free.  The file is read at most
 * once per command: a named one (--config, $DBCRON_CONFIG) before the
 * command runs, the default one only when a key is not given by a flag or
 * the environment, so `dbcron --db URL job list` works for a user who
 * cannot read /etc/dbcron/dbcron.conf.  Then the drop-ins: the .conf files
 * of FILE.d (/etc/dbcron/dbcron.conf.d for the default file, read even when
 * it is missing), in the order of their names, a later file's key
 * replacing an earlier one's (db and db-file replace each other).  Every
 * line is checked when it is read (syntax, known key, no key twice in one
 * file), whichever key was asked for;
 * values are checked by the command that uses them, under the label
 * "FILE:LINE: key".  The db value is never quoted (it may hold a
 * password); conf_get hands it to the store, whose messages mask it.
 */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/conf.h"
#include "core/alloc.h"

#define CONF_DEFAULT_PATH "/etc/dbcron/dbcron.conf"
/* A configuration file larger than this is not one. */
#define CONF_FILE_MAX (1024 * 1024)

static const struct {
	const char *key, *env;
} keys[CONF__COUNT] = {
#define CONF_ROW(id, key, env) [CONF_##id] = {key, env},
	CONF_KEYS(CONF_ROW)
#undef CONF_ROW
};

static const char *flags[CONF__COUNT];
static const char *flag_path;

/* More drop-ins than this in one directory is a mistake, not a setup. */
#define CONF_DROPIN_MAX 64

/* What the files gave: value, its file and label point into owned memory. */
static struct {
	bool loaded;
	/* the bytes of the main file and each drop-in read, values cut out
	 * in place, and their paths ([0] the main file's, "" when none) */
	char *text[1 + CONF_DROPIN_MAX];
	char *paths[1 + CONF_DROPIN_MAX];
	size_t nfiles;
	const char *why; /* "--config", "DBCRON_CONFIG" or "default" */
	char *value[CONF__COUNT];
	int line[CONF__COUNT];
	const char *vfile[CONF__COUNT];
	char *label[CONF__COUNT];
} file;

/* "--workers" labels for flags, built once. */
static char flag_label[CONF__COUNT][40];

const char *conf_key_name(conf_key k) { return keys[k].key; }
const char *conf_key_env(conf_key k) { return keys[k].env; }

/* A list key's flags joined with commas (owned; freed by conf_free). */
static char *flag_list[CONF__COUNT];

void conf_set_flag(conf_key k, const char *text)
{
	/* http-host may be given again: each one adds names */
	if (k != CONF_HTTP_HOST || !flags[k]) {
		flags[k] = text;
		return;
	}
	size_t a = strlen(flags[k]), b = strlen(text);
	char *joined = dbcron__malloc(a + b + 2);
	if (!joined)
		return; /* out of memory: the earlier names stay */
	memcpy(joined, flags[k], a);
	joined[a] = ',';
	memcpy(joined + a + 1, text, b + 1);
	dbcron__free(flag_list[k]);
	flag_list[k] = joined;
	flags[k] = joined;
}
void conf_set_path(const char *path) { flag_path = path; }

void conf_free(void)
{
	for (int k = 0; k < CONF__COUNT; k++) {
		dbcron__free(file.label[k]);
		if (flag_list[k] && flags[k] == flag_list[k])
			flags[k] = NULL;
		dbcron__free(flag_list[k]);
		flag_list[k] = NULL;
	}
	for (size_t i = 0; i < file.nfiles; i++) {
		if (file.text[i])
			explicit_bzero(file.text[i], strlen(file.text[i]));
		dbcron__free(file.text[i]);
		dbcron__free(file.paths[i]);
	}
	memset(&file, 0, sizeof(file));
}

static int key_of(const char *name)
{
	for (int k = 0; k < CONF__COUNT; k++)
		if (strcmp(keys[k].key, name) == 0)
			return k;
	return -1;
}

static bool blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

/* Reads all of fd (at most CONF_FILE_MAX bytes) into *out, NUL-ended. */
static int slurp(int fd, char **out, size_t *len, const char **why)
{
	size_t n = 0;
	char *buf = dbcron__malloc(CONF_FILE_MAX + 1);
	*out = NULL;
	if (!buf) {
		*why = "out of memory";
		return CLI_EXIT_FAIL;
	}
	for (;;) {
		ssize_t got = read(fd, buf + n, CONF_FILE_MAX + 1 - n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			*why = strerror(errno);
			dbcron__free(buf);
			return CLI_EXIT_USAGE;
		}
		if (got == 0)
			break;
		n += (size_t)got;
		if (n > CONF_FILE_MAX) {
			*why = "larger than 1 MiB, not a configuration file";
			dbcron__free(buf);
			return CLI_EXIT_USAGE;
		}
	}
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return 0;
}

/* Checks every line and cuts the values out in place; a key replaces what
 * an earlier file gave it. */
static int parse(const char *cmd, const char *path, char *text, size_t len)
{
	int lineno = 0;
	int here[CONF__COUNT] = {0}; /* the line of each key in this file */
	char *p = text, *end = text + len;
	while (p < end) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		char *eol = nl ? nl : end;
		lineno++;
		if (memchr(p, '\0', (size_t)(eol - p))) {
			fprintf(stderr, "dbcron %s: %s:%d: a NUL byte (not a text file?)\n", cmd, path,
				lineno);
			return CLI_EXIT_USAGE;
		}
		*eol = '\0';
		while (p < eol && blank(*p))
			p++;
		char *q = eol;
		while (q > p && blank(q[-1]))
			q--;
		*q = '\0';
		if (p == q || *p == '#') {
			p = eol + 1;
			continue;
		}
		char *eq = strchr(p, '=');
		if (!eq || eq == p) {
			fprintf(stderr, "dbcron %s: %s:%d: expected KEY = VALUE\n", cmd, path, lineno);
			return CLI_EXIT_USAGE;
		}
		char *kend = eq, *v = eq + 1;
		while (kend > p && blank(kend[-1]))
			kend--;
		*kend = '\0';
		while (*v && blank(*v))
			v++;
		int k = key_of(p);
		if (k < 0) {
			fprintf(stderr, "dbcron %s: %s:%d: unknown key '%s' (see dbcron config --help)\n",
				cmd, path, lineno, p);
			return CLI_EXIT_USAGE;
		}
		if (!*v) {
			fprintf(stderr, "dbcron %s: %s:%d: %s: no value\n", cmd, path, lineno, p);
			return CLI_EXIT_USAGE;
		}
		if (here[k]) {
			fprintf(stderr, "dbcron %s: %s:%d: %s: already set at line %d\n", cmd, path,
				lineno, p, here[k]);
			return CLI_EXIT_USAGE;
		}
		here[k] = lineno;
		size_t n = strlen(path) + strlen(p) + 32;
		char *label = dbcron__malloc(n);
		if (!label) {
			fprintf(stderr, "dbcron %s: out of memory reading %s\n", cmd, path);
			return CLI_EXIT_FAIL;
		}
		snprintf(label, n, "%s:%d: %s", path, lineno, p);
		/* the two ways to name the database replace each other */
		int other = k == CONF_DB ? CONF_DB_FILE : k == CONF_DB_FILE ? CONF_DB : -1;
		for (int j = 0; j < 2; j++) {
			int x = j ? other : k;
			if (x < 0)
				continue;
			dbcron__free(file.label[x]);
			file.label[x] = NULL;
			file.value[x] = NULL;
		}
		file.value[k] = v;
		file.line[k] = lineno;
		file.vfile[k] = path;
		file.label[k] = label;
		p = eol + 1;
	}
	if (here[CONF_DB] && here[CONF_DB_FILE]) {
		int a = here[CONF_DB], b = here[CONF_DB_FILE];
		fprintf(stderr, "dbcron %s: %s:%d: db and db-file are both set (line %d); keep one\n",
			cmd, path, a > b ? a : b, a > b ? b : a);
		return CLI_EXIT_USAGE;
	}
	return 0;
}

/* Reads and parses one file into slot file.nfiles; 0, or the exit status
 * after the message (what names it: "--config", "configuration file"). */
static int read_one(const char *cmd, const char *path, const char *what)
{
	const char *why;
	size_t len = 0, i = file.nfiles;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "dbcron %s: %s %s: %s\n", cmd, what, path, strerror(errno));
		return CLI_EXIT_USAGE;
	}
	int status = slurp(fd, &file.text[i], &len, &why);
	close(fd);
	if (status) {
		fprintf(stderr, "dbcron %s: %s: %s\n", cmd, path, why);
		return status;
	}
	if (!(file.paths[i] = dbcron__strdup(path))) {
		dbcron__free(file.text[i]);
		file.text[i] = NULL;
		fprintf(stderr, "dbcron %s: out of memory reading %s\n", cmd, path);
		return CLI_EXIT_FAIL;
	}
	file.nfiles++;
	return parse(cmd, file.paths[i], file.text[i], len);
}

/* The drop-ins of main (the .conf files of MAIN.d), in the order of their names.  A
 * missing directory is the usual case. */
static int read_dropins(const char *cmd, const char *main_path)
{
	size_t n = strlen(main_path) + sizeof(".d/*.conf");
	char *pattern = dbcron__malloc(n);
	if (!pattern) {
		fprintf(stderr, "dbcron %s: out of memory reading %s.d\n", cmd, main_path);
		return CLI_EXIT_FAIL;
	}
	snprintf(pattern, n, "%s.d/*.conf", main_path);
	glob_t g;
	int rc = glob(pattern, GLOB_ERR, NULL, &g), status = 0;
	if (rc == GLOB_NOMATCH || (rc == GLOB_ABORTED && errno == ENOENT)) {
		rc = 0;
		g.gl_pathc = 0;
	} else if (rc) {
		fprintf(stderr, "dbcron %s: %s.d: cannot list the drop-ins%s\n", cmd, main_path,
			rc == GLOB_ABORTED ? " (not readable?)" : "");
		status = CLI_EXIT_USAGE;
	} else if (g.gl_pathc > CONF_DROPIN_MAX) {
		fprintf(stderr, "dbcron %s: %s.d: %zu drop-ins, more than %d\n", cmd, main_path,
			(size_t)g.gl_pathc, CONF_DROPIN_MAX);
		status = CLI_EXIT_USAGE;
	}
	for (size_t i = 0; !status && i < g.gl_pathc; i++)
		status = read_one(cmd, g.gl_pathv[i], "drop-in");
	if (rc != GLOB_NOMATCH && g.gl_pathc)
		globfree(&g);
	dbcron__free(pattern);
	return status;
}

static int load(const char *cmd)
{
	const char *path = flag_path, *env = getenv("DBCRON_CONFIG");
	int status;
	if (file.loaded)
		return 0;
	file.why = "--config";
	if (!path && env) {
		if (!*env) {
			fprintf(stderr, "dbcron %s: DBCRON_CONFIG is set but empty; unset it or name a file\n",
				cmd);
			return CLI_EXIT_USAGE;
		}
		path = env;
		file.why = "DBCRON_CONFIG";
	}
	if (path && !*path) {
		fprintf(stderr, "dbcron %s: --config: empty file name\n", cmd);
		return CLI_EXIT_USAGE;
	}
	bool named = path != NULL;
	if (!named) {
		path = CONF_DEFAULT_PATH;
		file.why = "default";
	}
	if (!named && access(path, F_OK) != 0 && errno == ENOENT) {
		/* no file is the usual case: every key has a default */
		if (!(file.paths[0] = dbcron__strdup("")))
			goto out_oom;
		file.nfiles = 1;
		status = 0;
	} else {
		status = read_one(cmd, path, named ? file.why : "configuration file");
	}
	if (!status)
		status = read_dropins(cmd, path);
	if (status) {
		conf_free();
		return status;
	}
	file.loaded = true;
	return 0;
out_oom:
	fprintf(stderr, "dbcron %s: out of memory reading %s\n", cmd, path);
	return CLI_EXIT_FAIL;
}

int conf_load_named(const char *cmd)
{
	return flag_path || getenv("DBCRON_CONFIG") ? load(cmd) : 0;
}

int conf_file(const char *cmd, const char **path, const char **why)
{
	int status = load(cmd);
	*path = file.nfiles ? file.paths[0] : "";
	*why = file.why;
	return status;
}

const char *conf_dropin(size_t i)
{
	return i + 1 < file.nfiles ? file.paths[i + 1] : NULL;
}

/* The key's environment variable, if it has one and it is set. */
static int env_get(const char *cmd, conf_key k, conf_value *out)
{
	const char *env = keys[k].env ? getenv(keys[k].env) : NULL;
	*out = (conf_value){.text = NULL, .from = CONF_FROM_DEFAULT, .label = keys[k].key};
	if (!env)
		return 0;
	if (!*env) {
		fprintf(stderr, "dbcron %s: %s is set but empty; unset it or give a value\n", cmd,
			keys[k].env);
		return CLI_EXIT_USAGE;
	}
	*out = (conf_value){env, CONF_FROM_ENV, keys[k].env, 0, NULL};
	return 0;
}

int conf_get(const char *cmd, conf_key k, conf_value *out)
{
	*out = (conf_value){.text = NULL, .from = CONF_FROM_DEFAULT, .label = keys[k].key};
	if (flags[k]) {
		snprintf(flag_label[k], sizeof(flag_label[k]), "--%s", keys[k].key);
		*out = (conf_value){flags[k], CONF_FROM_FLAG, flag_label[k], 0, NULL};
		return 0;
	}
	int status = env_get(cmd, k, out);
	if (status || out->text)
		return status;
	if ((status = load(cmd)))
		return status;
	if (file.value[k])
		*out = (conf_value){file.value[k], CONF_FROM_FILE, file.label[k], file.line[k],
				    file.vfile[k]};
	return 0;
}

int conf_get_either(const char *cmd, conf_key a, conf_key b, conf_value *out, conf_key *which)
{
	conf_value va, vb;
	int status;
	*which = a;
	if (flags[a] && flags[b])
		return cli_usage_error(cmd, "give --%s or --%s, not both", keys[a].key, keys[b].key);
	/* a flag settles it before a lower level is read, or complains */
	if (flags[b])
		*which = b;
	if (flags[a] || flags[b])
		return conf_get(cmd, *which, out);
	/* then the environment, before the file is read */
	if ((status = env_get(cmd, a, &va)) || (status = env_get(cmd, b, &vb)))
		return status;
	if (va.text && vb.text) {
		fprintf(stderr, "dbcron %s: %s and %s are both set; unset one\n", cmd, keys[a].env,
			keys[b].env);
		return CLI_EXIT_USAGE;
	}
	if (vb.text)
		*which = b;
	if (va.text || vb.text) {
		*out = va.text ? va : vb;
		return 0;
	}
	/* the file refuses both when it is read */
	if ((status = conf_get(cmd, a, &va)) || (status = conf_get(cmd, b, &vb)))
		return status;
	if (vb.text)
		*which = b;
	*out = vb.text ? vb : va;
	return 0;
}

int conf_bool(const char *cmd, const conf_value *v, bool *out)
{
	static const char *const yes[] = {"true", "yes", "on", "1"}, *const no[] = {"false", "no", "off", "0"};
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (strcmp(v->text, yes[i]) == 0) {
			*out = true;
			return 0;
		}
		if (strcmp(v->text, no[i]) == 0) {
			*out = false;
			return 0;
		}
	}
	return cli_usage_error(cmd, "%s: '%s' is not true or false", v->label, v->text);
}
