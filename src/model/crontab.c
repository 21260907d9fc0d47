/*
 * Crontab lines -> job apply objects (crontab.h).  Owns the reading of
 * crontab(5) as cron(8) (Vixie cron, cronie) reads it: comments and blank
 * lines, VAR=value lines that apply to the entries below them, the five
 * time fields or an @ macro, the system format's user column, and the
 * command's % rule.  Invariants kept: every line is either an entry that
 * model_jobdef_from_json accepted, a comment, a blank, a variable that was
 * applied, or a report with its line number, never dropped in silence;
 * a bad line refuses only itself; a name depends on the line's text alone.
 */
#include <glib.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "exec/runas.h"
#include "model/crontab.h"
#include "model/json.h"

/* cron(8)'s PATH for a job whose crontab sets none (and its shell). */
#define CRON_PATH "/usr/bin:/bin"
#define CRON_SHELL "/bin/sh"
/* The part of a name taken from the command's first word. */
#define NAME_WORD_MAX 40

typedef struct parser {
	const model_crontab_opts *o;
	model_crontab_report_fn report;
	void *ctx;
	size_t line, refused;
	json_t *jobs;  /* the result */
	json_t *names; /* name -> times seen, for -2, -3 */
	json_t *env;   /* VAR -> value, in the order first set */
	bool nomem;
} parser;

static void refuse(parser *p, const char *fmt, ...) DBCRON_PRINTF(2, 3);

static void refuse(parser *p, const char *fmt, ...)
{
	char msg[sizeof(((dbcron_err *)0)->msg) + 128];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	p->refused++;
	if (p->report)
		p->report(p->ctx, p->line, msg);
}

static bool blank(char c)
{
	return c == ' ' || c == '\t';
}

static const char *skip_blanks(const char *s, const char *end)
{
	while (s < end && blank(*s))
		s++;
	return s;
}

static const char *skip_word(const char *s, const char *end)
{
	while (s < end && !blank(*s))
		s++;
	return s;
}

/* FNV-1a: small, and the same on every host and in every release, which
 * is what a stable name needs (not strength). */
static uint32_t fnv1a(const char *s, size_t n)
{
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 16777619u;
	}
	return h;
}

/* crontab-WORD-HASH: WORD from the command's first word (its last path
 * part, letters, digits, '.', '_' and '-' kept), HASH of the whole line. */
static void make_name(const char *line, size_t n, const char *cmd, char *out, size_t cap)
{
	char word[NAME_WORD_MAX + 1];
	size_t w = 0;
	const char *end = cmd;
	while (*end && !blank(*end) && *end != ';' && *end != '%')
		end++;
	const char *start = end;
	while (start > cmd && start[-1] != '/')
		start--;
	for (const char *c = start; c < end && w < NAME_WORD_MAX; c++)
		if ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		    (*c >= '0' && *c <= '9') || *c == '.' || *c == '_' || *c == '-')
			word[w++] = *c;
	word[w] = '\0';
	snprintf(out, cap, "crontab-%s%s%08x", word, w ? "-" : "", (unsigned)fnv1a(line, n));
}

/*
 * A VAR=value line as cron(8)'s load_env reads it: a name up to blanks or
 * '=', optional blanks around '=', the value without surrounding blanks
 * and, when it is quoted with ' or ", without its quotes.  false when the
 * line is not one (then it is an entry).  *name and *value are new
 * strings, the caller's.
 */
static bool env_line(const char *s, const char *end, char **name, char **value, bool *nomem)
{
	const char *n0 = s, *n1;
	*name = *value = NULL;
	if (s < end && (*s == '\'' || *s == '"')) {
		char q = *s++;
		n0 = s;
		while (s < end && *s != q)
			s++;
		if (s == end)
			return false;
		n1 = s++;
	} else {
		while (s < end && !blank(*s) && *s != '=')
			s++;
		n1 = s;
	}
	if (n1 == n0)
		return false;
	s = skip_blanks(s, end);
	if (s == end || *s != '=')
		return false;
	s = skip_blanks(s + 1, end);
	const char *v0 = s, *v1 = end;
	while (v1 > v0 && blank(v1[-1]))
		v1--;
	if (v1 - v0 >= 2 && (*v0 == '\'' || *v0 == '"') && v1[-1] == *v0) {
		v0++;
		v1--;
	}
	*name = dbcron__strndup(n0, (size_t)(n1 - n0));
	*value = dbcron__strndup(v0, (size_t)(v1 - v0));
	if (!*name || !*value) {
		dbcron__free(*name);
		dbcron__free(*value);
		*name = *value = NULL;
		*nomem = true;
	}
	return true;
}

static void set_env(parser *p, const char *name, const char *value)
{
	size_t a = strlen(name), b = strlen(value);
	char *kv = dbcron__malloc(a + b + 2);
	if (!kv) {
		p->nomem = true;
		return;
	}
	memcpy(kv, name, a);
	kv[a] = '=';
	memcpy(kv + a + 1, value, b + 1);
	dbcron_err why = {0};
	if (runas_check_env(kv, &why))
		refuse(p, "%s: %s (not set; the entries below run without it)", name, why.msg);
	else if (json_object_set_new(p->env, name, json_string(value)))
		p->nomem = true;
	dbcron__free(kv);
}

static void variable(parser *p, const char *name, const char *value)
{
	/* what only cron's mailer reads: nothing to express when unset */
	static const char *const mail[] = {"MAILTO", "MAILFROM", "CONTENT_TYPE",
					   "CONTENT_TRANSFER_ENCODING"};
	for (size_t i = 0; i < sizeof(mail) / sizeof(mail[0]); i++)
		if (strcmp(name, mail[i]) == 0) {
			if (*value)
				refuse(p, "%s=%s: dbcron mails nothing; a run's output is kept in "
					  "the run log (dbcron runs); the entries are imported "
					  "without it",
				       name, value);
			return;
		}
	if (strcmp(name, "RANDOM_DELAY") == 0) {
		if (strcmp(value, "0") && *value)
			refuse(p, "RANDOM_DELAY=%s: dbcron has no random start delay; the "
				  "entries below are imported without it",
			       value);
		return;
	}
	/* CRON_TZ (cronie) is the schedule's zone, not the job's variable;
	 * SHELL, PATH and HOME are also the job's environment, as in cron */
	if (strcmp(name, "CRON_TZ") == 0) {
		if (json_object_set_new(p->env, "\001tz", json_string(value)))
			p->nomem = true;
		return;
	}
	set_env(p, name, value);
}

/*
 * cron(8)'s % rule: the first % not escaped as \% ends the command, the
 * rest is the command's stdin with each further unescaped % a newline
 * and a newline at the end when it has none; \% is a % in both parts,
 * other backslashes stay.  *cmd and *in are new strings (*in NULL when
 * there is no %); false when out of memory.
 */
static bool split_percent(const char *s, char **cmd, char **in)
{
	size_t n = strlen(s);
	char *c = dbcron__malloc(n + 1), *i = NULL;
	size_t cn = 0, in_n = 0;
	*cmd = *in = NULL;
	if (!c)
		return false;
	const char *q = s;
	for (; *q; q++) {
		if (q[0] == '\\' && q[1] == '%') {
			c[cn++] = '%';
			q++;
		} else if (*q == '%') {
			break;
		} else {
			c[cn++] = *q;
		}
	}
	c[cn] = '\0';
	if (*q == '%') {
		i = dbcron__malloc(n + 2);
		if (!i) {
			dbcron__free(c);
			return false;
		}
		for (q++; *q; q++) {
			if (q[0] == '\\' && q[1] == '%') {
				i[in_n++] = '%';
				q++;
			} else {
				i[in_n++] = *q == '%' ? '\n' : *q;
			}
		}
		if (in_n && i[in_n - 1] != '\n')
			i[in_n++] = '\n';
		i[in_n] = '\0';
	}
	*cmd = c;
	*in = i;
	return true;
}

/* The command array: SHELL -c CMD, or with stdin a /bin/sh that pipes
 * it in ("$1") to SHELL -c CMD ("$2", "$3"). */
static json_t *command_json(const char *shell, const char *cmd, const char *in)
{
	json_t *a = json_array();
	if (!a)
		return NULL;
	int bad = 0;
	if (in) {
		bad |= json_array_append_new(a, json_string(CRON_SHELL));
		bad |= json_array_append_new(a, json_string("-c"));
		bad |= json_array_append_new(a, json_string("printf '%s' \"$1\" | \"$2\" -c \"$3\""));
		bad |= json_array_append_new(a, json_string("crontab-stdin"));
		bad |= json_array_append_new(a, json_string(in));
		bad |= json_array_append_new(a, json_string(shell));
		bad |= json_array_append_new(a, json_string(cmd));
	} else {
		bad |= json_array_append_new(a, json_string(shell));
		bad |= json_array_append_new(a, json_string("-c"));
		bad |= json_array_append_new(a, json_string(cmd));
	}
	if (bad) {
		json_decref(a);
		return NULL;
	}
	return a;
}

static json_t *env_json(const parser *p)
{
	json_t *a = json_array();
	const char *k;
	json_t *v;
	bool path = false;
	if (!a)
		return NULL;
	json_object_foreach(p->env, k, v) {
		if (k[0] == '\001')
			continue;
		path |= strcmp(k, "PATH") == 0;
		const char *val = json_string_value(v);
		size_t kn = strlen(k), vn = strlen(val);
		char *kv = dbcron__malloc(kn + vn + 2);
		if (!kv)
			goto out_bad;
		memcpy(kv, k, kn);
		kv[kn] = '=';
		memcpy(kv + kn + 1, val, vn + 1);
		int bad = json_array_append_new(a, json_string(kv));
		dbcron__free(kv);
		if (bad)
			goto out_bad;
	}
	if (!path && json_array_append_new(a, json_string("PATH=" CRON_PATH)))
		goto out_bad;
	return a;
out_bad:
	json_decref(a);
	return NULL;
}

/* The name for this line, unique in the file: -2, -3... for repeats. */
static bool unique_name(parser *p, const char *base, char *out, size_t cap)
{
	json_t *seen = json_object_get(p->names, base);
	json_int_t n = seen ? json_integer_value(seen) + 1 : 1;
	if (json_object_set_new(p->names, base, json_integer(n)))
		return false;
	if (n == 1)
		snprintf(out, cap, "%s", base);
	else
		snprintf(out, cap, "%s-%lld", base, (long long)n);
	return true;
}

/* The time fields or the @ word at *t into spec (cap bytes), *t moved past
 * them; false when the line was refused. */
static bool read_schedule(parser *p, const char **t, const char *end, char *spec, size_t cap)
{
	size_t nspec = 0;
	int fields = 0;
	if (**t == '@') {
		const char *e = skip_word(*t, end);
		if ((size_t)(e - *t) >= cap) {
			refuse(p, "the @ word is too long");
			return false;
		}
		memcpy(spec, *t, (size_t)(e - *t));
		spec[e - *t] = '\0';
		if (strcmp(spec, "@reboot") == 0) {
			refuse(p, "@reboot: not expressible (dbcron fires on a clock, not at a "
				  "host's boot; a systemd unit or /etc/rc.local can run it)");
			return false;
		}
		*t = skip_blanks(e, end);
		return true;
	}
	for (; fields < 5; fields++) {
		const char *e = skip_word(*t, end);
		if (e == *t)
			break;
		if (nspec + (size_t)(e - *t) + 2 > cap) {
			refuse(p, "the time fields are too long");
			return false;
		}
		if (nspec)
			spec[nspec++] = ' ';
		memcpy(spec + nspec, *t, (size_t)(e - *t));
		nspec += (size_t)(e - *t);
		*t = skip_blanks(e, end);
	}
	spec[nspec] = '\0';
	if (fields < 5) {
		refuse(p, "expected five time fields (or an @ word) and a command");
		return false;
	}
	return true;
}

/* The system format's user column at *t (or the user the options give)
 * into user (cap bytes, "" for none), *t moved past it; false when the
 * line was refused. */
static bool read_user(parser *p, const char **t, const char *end, char *user, size_t cap)
{
	user[0] = '\0';
	if (!p->o->system) {
		if (p->o->user)
			snprintf(user, cap, "%s", p->o->user);
		return true;
	}
	const char *e = skip_word(*t, end);
	if (e == *t) {
		refuse(p, "no user column (the system format is: time fields, user, command)");
		return false;
	}
	if ((size_t)(e - *t) >= cap) {
		refuse(p, "the user name is too long");
		return false;
	}
	memcpy(user, *t, (size_t)(e - *t));
	user[e - *t] = '\0';
	*t = skip_blanks(e, end);
	return true;
}

/* One entry as the object `job apply` reads, with the variables set above
 * it; NULL when out of memory. */
static json_t *entry_json(const parser *p, const char *name, const char *spec,
			  const char *user, const char *cmd, const char *in)
{
	json_t *shell = json_object_get(p->env, "SHELL");
	json_t *tz = json_object_get(p->env, "\001tz");
	json_t *home = json_object_get(p->env, "HOME");
	json_t *obj = json_object();
	if (!obj)
		return NULL;
	int bad = json_object_set_new(obj, "name", json_string(name));
	bad |= json_object_set_new(obj, "cron", json_string(spec));
	if (tz)
		bad |= json_object_set(obj, "tz", tz);
	bad |= json_object_set_new(obj, "misfire", json_string("skip"));
	bad |= json_object_set_new(obj, "overlap", json_string("allow"));
	bad |= json_object_set_new(obj, "retries", json_integer(0));
	bad |= json_object_set_new(
		obj, "command", command_json(shell ? json_string_value(shell) : CRON_SHELL, cmd, in));
	bad |= json_object_set_new(obj, "env", env_json(p));
	if (*user)
		bad |= json_object_set_new(obj, "user", json_string(user));
	if (home)
		bad |= json_object_set(obj, "cwd", home);
	if (bad) {
		json_decref(obj);
		return NULL;
	}
	return obj;
}

static void entry(parser *p, const char *s, const char *end)
{
	char spec[1024], user[256], base[256], name[300];
	const char *t = s;
	const char *line = s;
	size_t line_n = (size_t)(end - s);
	while (line_n && blank(line[line_n - 1]))
		line_n--;

	if (!read_schedule(p, &t, end, spec, sizeof(spec)) ||
	    !read_user(p, &t, end, user, sizeof(user)))
		return;
	if (t == end) {
		refuse(p, "no command after the %s", p->o->system ? "user column" : "time fields");
		return;
	}

	char *text = dbcron__strndup(t, (size_t)(end - t)), *cmd = NULL, *in = NULL;
	json_t *obj = NULL;
	model_jobdef d;
	model_jobdef_init(&d, false);
	if (!text || !split_percent(text, &cmd, &in))
		goto out_nomem;
	if (!*cmd) {
		refuse(p, "the command is empty (the line starts with %%)");
		goto out_free;
	}
	make_name(line, line_n, cmd, base, sizeof(base));
	if (!unique_name(p, base, name, sizeof(name)) ||
	    !(obj = entry_json(p, name, spec, user, cmd, in)))
		goto out_nomem;

	/* the model's own checks, so that a bad field is this line's report */
	dbcron_err why = {0};
	const char *ignored;
	if (model_jobdef_from_json(&d, obj, &ignored, &why)) {
		if (why.code == DBCRON_ENOMEM)
			goto out_nomem;
		refuse(p, "%s", why.msg);
		goto out_free;
	}
	if (json_array_append(p->jobs, obj))
		goto out_nomem;
	goto out_free;
out_nomem:
	p->nomem = true;
out_free:
	model_jobdef_clear(&d);
	json_decref(obj);
	dbcron__free(text);
	dbcron__free(cmd);
	dbcron__free(in);
}

static void one_line(parser *p, const char *s, const char *end)
{
	for (const char *c = s; c < end; c++)
		if ((unsigned char)*c < 0x20 && *c != '\t') {
			refuse(p, "control character 0x%02x at column %zu%s", (unsigned char)*c,
			       (size_t)(c - s) + 1,
			       *c == '\r' ? " (a file with CRLF line ends?)" : "");
			return;
		}
	if (!g_utf8_validate(s, end - s, NULL)) {
		refuse(p, "not UTF-8 text");
		return;
	}
	s = skip_blanks(s, end);
	if (s == end || *s == '#')
		return;
	char *name, *value;
	if (env_line(s, end, &name, &value, &p->nomem)) {
		if (name)
			variable(p, name, value);
		dbcron__free(name);
		dbcron__free(value);
		return;
	}
	entry(p, s, end);
}

int model_crontab_parse(const char *text, size_t len, const model_crontab_opts *o,
			json_t **jobs, size_t *refused, model_crontab_report_fn report,
			void *ctx, dbcron_err *err)
{
	static const model_crontab_opts none = {0};
	parser p = {.o = o ? o : &none, .report = report, .ctx = ctx};
	int rc = DBCRON_ENOMEM;
	*jobs = NULL;
	*refused = 0;
	p.jobs = json_array();
	p.names = json_object();
	p.env = json_object();
	if (!p.jobs || !p.names || !p.env)
		goto out;
	const char *s = text, *end = text + len;
	while (s < end && !p.nomem) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		const char *eol = nl ? nl : end;
		p.line++;
		one_line(&p, s, eol);
		s = nl ? nl + 1 : end;
	}
	if (p.nomem)
		goto out;
	*jobs = p.jobs;
	p.jobs = NULL;
	*refused = p.refused;
	rc = DBCRON_OK;
out:
	json_decref(p.jobs);
	json_decref(p.names);
	json_decref(p.env);
	return rc ? dbcron_err_set(err, rc, "out of memory") : DBCRON_OK;
}
