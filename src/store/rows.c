/*
 * What every dialect shares below the protocol: rows -> jobs and runs (job
 * columns by the field table, stmt.h), the argv codec, batches, statement
 * names, the expansion of the job-column markers in statement text and the
 * schema message (the URL password masker is url.c).  Keeps the rule that a
 * stored job row reads back as the job that was written, on every dialect:
 * argv is a JSON array of strings and nothing else, and a command argument
 * that is not UTF-8 is refused when written, never stored to break a later
 * read.  The dialects call this file and url.c, never the protocol above.
 */
#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/alloc.h"
#include "core/text.h"
#include "store/store_int.h"

/* ---- statement names ---- */

static const char *const what[ST__COUNT] = {
#define X(id, w, inv) [ST_##id] = w,
	STORE_STATEMENTS(X)
#undef X
};

static const char *const ids[ST__COUNT] = {
#define X(id, w, inv) [ST_##id] = #id,
	STORE_STATEMENTS(X)
#undef X
};

const char *store_stmt_what(int id)
{
	return id >= 0 && id < ST__COUNT ? what[id] : "?";
}

const char *store_stmt_id_name(int id)
{
	return id >= 0 && id < ST__COUNT ? ids[id] : "?";
}

int store_stmt_by_name(const char *name)
{
	for (int i = 0; name && i < ST__COUNT; i++)
		if (strcasecmp(ids[i], name) == 0)
			return i;
	return -1;
}

/* ---- job-column markers in statement text (stmt.h) ---- */

static bool is_put(const model_field *f)
{
	return f->role != MODEL_ROLE_STORE;
}

/* One marker (its name and number) into b. */
static int expand_marker(store_text *b, const char *name, size_t nlen, int n,
			 const char *const *types)
{
	bool first = true;
	char t[128];
	for (int i = 0; i < MODEL_NFIELDS; i++) {
		const model_field *f = &model_fields[i];
		if (!is_put(f))
			continue;
		if (!first)
			store_text_putn(b, ", ", 2);
		first = false;
		int len;
		if (nlen == 8 && !memcmp(name, "PUT_COLS", 8))
			len = snprintf(t, sizeof(t), "%s", f->column);
		else if (nlen == 10 && !memcmp(name, "PUT_VALUES", 10))
			len = snprintf(t, sizeof(t), "?%d", n++);
		else if (nlen == 7 && !memcmp(name, "PUT_SET", 7))
			len = snprintf(t, sizeof(t), "%s = ?%d", f->column, n++);
		else if (nlen == 9 && !memcmp(name, "PUT_SET_V", 9))
			len = snprintf(t, sizeof(t), "%s = v.%s", f->column, f->column);
		else if (nlen == 10 && !memcmp(name, "PUT_ARRAYS", 10) && types)
			len = snprintf(t, sizeof(t), "$%d::%s[]", n++, types[f->store]);
		else if (nlen == 8 && !memcmp(name, "PUT_JSON", 8) && types)
			len = snprintf(t, sizeof(t), "%s %s PATH '$[%d]'", f->column, types[f->store],
				       n++);
		else
			return DBCRON_EINTERNAL;
		store_text_putn(b, t, (size_t)len);
	}
	return DBCRON_OK;
}

/* text with every "{NAME N}" expanded into b (NUL-terminated). */
static int expand_text(store_text *b, const char *text, const char *const *types)
{
	b->len = 0;
	for (const char *p = text; *p;) {
		const char *open = strchr(p, '{');
		if (!open) {
			store_text_putn(b, p, strlen(p));
			break;
		}
		store_text_putn(b, p, (size_t)(open - p));
		const char *close = strchr(open, '}');
		if (!close)
			return DBCRON_EINTERNAL;
		size_t nlen = strcspn(open + 1, " }");
		int n = (int)strtol(open + 1 + nlen, NULL, 10);
		int rc = expand_marker(b, open + 1, nlen, n, types);
		if (rc)
			return rc;
		p = close + 1;
	}
	store_text_putc(b, '\0');
	return b->oom ? DBCRON_ENOMEM : DBCRON_OK;
}

int store__sql_texts(store_sql_texts *t, const char *const *sql, const char *const *types,
		     dbcron_err *err)
{
	int rc = DBCRON_OK;
	pthread_mutex_lock(&t->mu);
	for (size_t id = 0; !t->ready && id < ST__COUNT; id++) {
		t->text[id] = sql[id];
		if (!sql[id] || !strchr(sql[id], '{'))
			continue;
		store_text b = {0};
		if ((rc = expand_text(&b, sql[id], types))) {
			store_text_free(&b);
			/* none kept: the next open tries again */
			for (size_t k = 0; k < id; k++)
				if (t->text[k] != sql[k])
					dbcron__free((char *)t->text[k]);
			break;
		}
		/* kept for the life of the process, as the literals are */
		t->text[id] = b.p;
	}
	if (!rc)
		t->ready = true;
	pthread_mutex_unlock(&t->mu);
	if (rc)
		return dbcron_err_set(err, rc, "%s", rc == DBCRON_ENOMEM
				      ? "out of memory preparing the statements"
				      : "a statement's job-column marker is not known (stmt.h)");
	return DBCRON_OK;
}

/* ---- the message every dialect's migrate() shares ---- */

int store_schema_newer(dbcron_err *err, const char *url, int found, int mine)
{
	return dbcron_err_set(err, DBCRON_ESCHEMA,
			      "database %s has schema version %d, newer than this binary's %d: "
			      "upgrade dbcron",
			      url, found, mine);
}

/* ---- batches ---- */

void store_batch_init(store_batch *b, int ncols, const store_bcol *cols)
{
	memset(b, 0, sizeof(*b));
	b->ncols = ncols;
	b->cols = cols;
}

void store_batch_reset(store_batch *b, int ncols, const store_bcol *cols)
{
	b->ncols = ncols;
	b->cols = cols;
	b->ncells = 0;
	b->oom = false;
}

void store_batch_free(store_batch *b)
{
	dbcron__free(b->cells);
	memset(b, 0, sizeof(*b));
}

static store_cell *cell(store_batch *b)
{
	if (b->oom || dbcron__grow((void **)&b->cells, &b->cap, b->ncells + 1, sizeof(*b->cells))) {
		b->oom = true;
		return NULL;
	}
	store_cell *c = &b->cells[b->ncells++];
	memset(c, 0, sizeof(*c));
	return c;
}

void store_batch_i64(store_batch *b, int64_t v)
{
	store_cell *c = cell(b);
	if (c)
		c->i = v;
}

void store_batch_i64n(store_batch *b, int64_t v)
{
	store_cell *c = cell(b);
	if (c) {
		c->null = v < 0;
		c->i = v;
	}
}

void store_batch_bool(store_batch *b, bool v)
{
	store_batch_i64(b, v ? 1 : 0);
}

void store_batch_text(store_batch *b, const char *s)
{
	store_cell *c = cell(b);
	if (c) {
		c->null = !s;
		c->s = s;
	}
}

/* ---- text ---- */

/* the one UTF-8 rule, core/text.c */
size_t store_utf8_seq(const unsigned char *s)
{
	return dbcron__utf8_seq(s);
}

void store_text_putn(store_text *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->len + n + 1)
			cap *= 2;
		char *p = dbcron__realloc(b->p, cap);
		if (!p) {
			b->oom = true;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

/* Decimal digits without printf's format parsing: the batch encoders
 * write hundreds of ids and instants per claim (bench/sched.sh w2 spent a
 * tenth of the node's CPU on PostgreSQL in snprintf). */
void store_text_i64(store_text *b, int64_t v)
{
	char t[24], *e = t + sizeof(t), *p = e;
	uint64_t u = v < 0 ? -(uint64_t)v : (uint64_t)v;
	do
		*--p = (char)('0' + u % 10);
	while (u /= 10);
	if (v < 0)
		*--p = '-';
	store_text_putn(b, p, (size_t)(e - p));
}

size_t store_text_plain(store_text *b, const unsigned char *p, bool controls)
{
	const unsigned char *q = p;
	while (*q && *q < 0x80 && *q != '"' && *q != '\\' && (controls || *q >= 0x20))
		q++;
	store_text_putn(b, (const char *)p, (size_t)(q - p));
	return (size_t)(q - p);
}

void store_text_free(store_text *b)
{
	dbcron__free(b->p);
	*b = (store_text){0};
}

bool store_utf8_valid(const char *s)
{
	return dbcron__utf8_valid(s);
}

/* ---- argv and env: JSON arrays of strings ---- */

/* v[0..n) as a compact JSON array; elem ("command argument", "env
 * variable") names an element that is not UTF-8. */
static int strv_encode(const char *job, const char *elem, char *const *v, int n, char **out,
		       dbcron_err *err)
{
	*out = NULL;
	if (!v || n <= 0)
		return DBCRON_OK;
	json_t *a = json_array();
	if (!a)
		return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory writing job '%s'", job);
	int rc = DBCRON_OK;
	for (int i = 0; i < n; i++) {
		const char *e = v[i] ? v[i] : "";
		if (!store_utf8_valid(e)) {
			rc = dbcron_err_set(err, DBCRON_EINVAL, "job '%s': %s %d is not valid UTF-8",
					    job, elem, i + 1);
			goto out_decref;
		}
		if (json_array_append_new(a, json_string(e))) {
			rc = dbcron_err_set(err, DBCRON_ENOMEM, "out of memory writing job '%s'", job);
			goto out_decref;
		}
	}
	char *text = json_dumps(a, JSON_COMPACT);
	if (!text) {
		rc = dbcron_err_set(err, DBCRON_ENOMEM, "out of memory writing job '%s'", job);
		goto out_decref;
	}
	/* jansson allocates with malloc: hand the caller our own copy. */
	*out = dbcron__strdup(text);
	free(text);
	if (!*out)
		rc = dbcron_err_set(err, DBCRON_ENOMEM, "out of memory writing job '%s'", job);
out_decref:
	json_decref(a);
	return rc;
}

/* The stored array back into *v (NULL-terminated) and *n; col names the
 * column in messages ("its command", "its env"), elem one element. */
static int strv_decode(const char *text, int64_t id, const char *col, const char *elem,
		       char ***v, int *n, dbcron_err *err)
{
	json_error_t jerr;
	json_t *a = json_loads(text, 0, &jerr);
	int rc;
	if (!a || !json_is_array(a)) {
		rc = dbcron_err_set(err, DBCRON_EDB, "job %lld: %s is not a JSON array",
				    (long long)id, col);
		goto out_decref;
	}
	size_t len = json_array_size(a);
	*v = dbcron__calloc(len + 1, sizeof(char *));
	if (!*v) {
		rc = dbcron_err_set(err, DBCRON_ENOMEM, "out of memory reading a job");
		goto out_decref;
	}
	for (size_t i = 0; i < len; i++) {
		const char *s = json_string_value(json_array_get(a, i));
		if (!s) {
			rc = dbcron_err_set(err, DBCRON_EDB, "job %lld: %s %zu is not a string",
					    (long long)id, elem, i + 1);
			goto out_decref;
		}
		if (!((*v)[i] = dbcron__strdup(s))) {
			rc = dbcron_err_set(err, DBCRON_ENOMEM, "out of memory reading a job");
			goto out_decref;
		}
		*n = (int)i + 1;
	}
	rc = DBCRON_OK;
out_decref:
	json_decref(a);
	return rc;
}

int store__argv_encode(const dbcron_job *job, char **out, dbcron_err *err)
{
	return strv_encode(job->name, "command argument", job->argv, job->argc, out, err);
}

int store__argv_decode(const char *text, dbcron_job *job, dbcron_err *err)
{
	return strv_decode(text, job->id, "its command", "command argument", &job->argv,
			   &job->argc, err);
}

int store__env_encode(const dbcron_job *job, char **out, dbcron_err *err)
{
	return strv_encode(job->name, "env variable", job->env, job->envc, out, err);
}

/* ---- rows ---- */

static int dup_col(store *s, int c, char **out)
{
	const char *t = s->d->col_text(s->c, c);
	*out = NULL;
	if (!t)
		return DBCRON_OK;
	*out = dbcron__strdup(t);
	return *out ? DBCRON_OK : DBCRON_ENOMEM;
}

static int64_t i64(store *s, int c) { return s->d->col_i64(s->c, c); }
static int64_t i64n(store *s, int c) { return s->d->col_null(s->c, c) ? -1 : i64(s, c); }

/* One field of the current row, at column c, by how it is stored. */
static int read_field(store *s, int c, const model_field *f, dbcron_job *job, dbcron_err *err)
{
	void *p = model_field_ptr(job, f);
	const char *t;
	switch (f->store) {
	case MODEL_FS_TEXT:
	case MODEL_FS_HANDLER:
		if (dup_col(s, c, p))
			return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory reading a job");
		return DBCRON_OK;
	case MODEL_FS_INT:
		*(int *)p = (int)i64(s, c);
		return DBCRON_OK;
	case MODEL_FS_INTN:
		*(int *)p = (int)i64n(s, c);
		return DBCRON_OK;
	case MODEL_FS_I64:
		*(int64_t *)p = i64(s, c);
		return DBCRON_OK;
	case MODEL_FS_I64N:
		*(int64_t *)p = i64n(s, c);
		return DBCRON_OK;
	case MODEL_FS_BOOL:
		*(bool *)p = i64(s, c) != 0;
		return DBCRON_OK;
	case MODEL_FS_ARGV:
		t = s->d->col_text(s->c, c);
		return t ? store__argv_decode(t, job, err) : DBCRON_OK;
	case MODEL_FS_ENV:
		t = s->d->col_text(s->c, c);
		return t ? strv_decode(t, job->id, "its env", "env variable", &job->env, &job->envc,
				       err)
			 : DBCRON_OK;
	}
	return dbcron_err_set(err, DBCRON_EINTERNAL, "job field %s: unknown storage", f->member);
}

int store__read_job(store *s, int c0, dbcron_job *job, dbcron_err *err)
{
	int rc;
	dbcron_job_init(job);
	job->id = i64(s, c0 + MODEL_COL_ID);
	/* every field at its column of STORE_JOB_COLS (stmt.h) */
	for (int i = 0; i < MODEL_NFIELDS; i++)
		if ((rc = read_field(s, c0 + 1 + i, &model_fields[i], job, err)))
			goto out_clear;
	return DBCRON_OK;
out_clear:
	dbcron_job_clear(job);
	return rc;
}

int store__read_run(store *s, dbcron_run *run, dbcron_err *err)
{
	int rc;
	memset(run, 0, sizeof(*run));
	run->id = i64(s, 0);
	run->job_id = i64(s, 1);
	run->fire_at = i64(s, 3);
	run->attempt = (int)i64(s, 4);
	run->state = (dbcron_run_state)i64(s, 5);
	run->due_at = i64(s, 6);
	run->started_ms = i64n(s, 9);
	run->finished_ms = i64n(s, 10);
	run->has_exit_code = !s->d->col_null(s->c, 11);
	run->exit_code = (int)i64(s, 11);
	run->missed = i64(s, 12);
	run->cancel_requested_ms = i64n(s, 15);
	run->node_index = (int)i64(s, 18);
	run->node_total = (int)i64(s, 19);
	run->backfill = i64(s, 20) == STORE_RK_BACKFILL;
	if ((rc = dup_col(s, 2, &run->job_name)) || (rc = dup_col(s, 7, &run->node)) ||
	    (rc = dup_col(s, 8, &run->claim_token)) || (rc = dup_col(s, 13, &run->error)) ||
	    (rc = dup_col(s, 14, &run->output)) || (rc = dup_col(s, 16, &run->params)) ||
	    (rc = dup_col(s, 17, &run->for_node))) {
		dbcron_run_clear(run);
		return dbcron_err_set(err, rc, "out of memory reading a run");
	}
	return DBCRON_OK;
}

/*
 * A job row for the operator's views and for a put over it: a row that no
 * longer decodes (a command that is not a JSON array, bytes that are not
 * UTF-8) comes back as its id and name with set_aside saying why, so one
 * bad row never breaks `job list` for every job, and a put can replace it.
 * Only running out of memory fails.
 */
int store__read_job_lenient(store *s, dbcron_job *job, dbcron_err *err)
{
	dbcron_err why = {0};
	int rc = store__read_job(s, 0, job, &why);
	if (rc == DBCRON_OK)
		return DBCRON_OK;
	if (rc == DBCRON_ENOMEM) {
		*err = why;
		return rc;
	}
	dbcron_job_init(job);
	job->id = store__i64(s, MODEL_COL_ID);
	const char *name = s->d->col_text(s->c, MODEL_COL_name);
	const char *spec = s->d->col_text(s->c, MODEL_COL_spec);
	job->kind = (dbcron_sched_kind)store__i64(s, MODEL_COL_kind);
	job->next_fire_at = -1;
	job->executor = DBCRON_EXEC_SHELL;
	size_t n = strlen(why.msg) + 32;
	job->name = dbcron__strdup(name ? name : "");
	job->spec = dbcron__strdup(spec ? spec : "");
	job->set_aside = dbcron__malloc(n);
	if (!job->name || !job->spec || !job->set_aside) {
		dbcron_job_clear(job);
		return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory reading a job");
	}
	dbcron__textf(job->set_aside, n, "cannot decode its row: %s", why.msg);
	return DBCRON_OK;
}

/* ---- JSON batches ---- */

static void json_cell(store_text *b, const store_cell *v, store_bcol type)
{
	static const char hex[] = "0123456789abcdef";
	if (v->null) {
		store_text_putn(b, "null", 4);
		return;
	}
	if (type == BC_I64 || type == BC_BOOL) {
		store_text_i64(b, v->i);
		return;
	}
	store_text_putc(b, '"');
	for (const unsigned char *p = (const unsigned char *)v->s; *p;) {
		size_t plain = store_text_plain(b, p, false);
		if (plain) {
			p += plain;
			continue;
		}
		if (*p == '"' || *p == '\\') {
			char e[2] = {'\\', (char)*p++};
			store_text_putn(b, e, 2);
		} else if (*p < 0x20) {
			char e[6] = {'\\', 'u', '0', '0', hex[*p >> 4], hex[*p & 15]};
			store_text_putn(b, e, 6);
			p++;
		} else if (*p < 0x80) {
			store_text_putc(b, (char)*p++);
		} else {
			size_t n = store_utf8_seq(p);
			store_text_putn(b, n ? (const char *)p : "?", n ? n : 1);
			p += n ? n : 1;
		}
	}
	store_text_putc(b, '"');
}

int store_batch_json(store_text *b, const store_batch *bt)
{
	b->len = 0;
	b->oom = bt->oom;
	store_text_putc(b, '[');
	size_t rows = store_batch_rows(bt);
	for (size_t r = 0; r < rows; r++) {
		if (r)
			store_text_putc(b, ',');
		if (bt->ncols > 1)
			store_text_putc(b, '[');
		for (int c = 0; c < bt->ncols; c++) {
			if (c)
				store_text_putc(b, ',');
			json_cell(b, &bt->cells[r * (size_t)bt->ncols + (size_t)c], bt->cols[c]);
		}
		if (bt->ncols > 1)
			store_text_putc(b, ']');
	}
	store_text_putc(b, ']');
	store_text_putc(b, '\0');
	if (!b->oom)
		b->len--;
	return b->oom ? DBCRON_ENOMEM : DBCRON_OK;
}

const char *store_text_clean(store_text *b, const char *s)
{
	if (store_utf8_valid(s))
		return s;
	b->len = 0;
	b->oom = false;
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		size_t n = store_utf8_seq(p);
		store_text_putn(b, n ? (const char *)p : "?", n ? n : 1);
		p += n ? n : 1;
	}
	store_text_putc(b, '\0');
	return b->oom ? NULL : b->p;
}
