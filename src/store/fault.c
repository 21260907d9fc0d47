/*
 * The fault seam: makes chosen statements fail on purpose so that tests
 * reach the error paths a real database reaches only by bad luck (a busy
 * timeout, a lost connection, a COMMIT whose reply never came, a
 * constraint).  Owns the per-handle fault list.  Production builds keep it:
 * with no fault set the cost is one NULL test per statement.  Only a
 * program arms it there: DBCRON_TEST_FAULTS is read in test builds alone
 * (fault_env.c).
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/alloc.h"
#include "store/store_int.h"

#define MAX_FAULTS 8

struct store_faults {
	store_fault f[MAX_FAULTS];
	long seen[MAX_FAULTS]; /* matching statements so far */
	long fired[MAX_FAULTS];
	size_t n;
	/* atomic: a test thread watches another thread's stall begin */
	atomic_long hits;
	bool reply_lost; /* the statement in flight must fail after it ran */
};

int store_fault_add(store *s, const store_fault *f, dbcron_err *err)
{
	if (!f || f->kind < STORE_FAULT_BUSY || f->kind > STORE_FAULT_STALL ||
	    f->stmt < -1 || f->stmt >= ST__COUNT || f->nth < 0 || f->times < 0)
		return dbcron_err_set(err, DBCRON_EINVAL, "fault: bad statement, kind or count");
	if (!s->faults && !(s->faults = dbcron__calloc(1, sizeof(*s->faults))))
		return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory adding a fault");
	if (s->faults->n == MAX_FAULTS)
		return dbcron_err_set(err, DBCRON_EINVAL, "fault: at most %d per handle", MAX_FAULTS);
	size_t k = s->faults->n++;
	s->faults->f[k] = *f;
	s->faults->seen[k] = s->faults->fired[k] = 0;
	return DBCRON_OK;
}

void store_fault_clear(store *s)
{
	dbcron__free(s->faults);
	s->faults = NULL;
}

long store_fault_hits(const store *s)
{
	return s->faults ? atomic_load(&s->faults->hits) : 0;
}

static const char *const kinds[] = {
	[STORE_FAULT_BUSY] = "busy", [STORE_FAULT_CONN] = "conn",
	[STORE_FAULT_REPLY_LOST] = "reply_lost", [STORE_FAULT_CONSTRAINT] = "constraint",
	[STORE_FAULT_STALL] = "stall",
};

static int parse_one(const char *spec, size_t len, store_fault *f, dbcron_err *err)
{
	char buf[320];
	if (len >= sizeof(buf))
		return dbcron_err_set(err, DBCRON_EINVAL, "DBCRON_TEST_FAULTS: entry too long");
	memcpy(buf, spec, len);
	buf[len] = '\0';
	*f = (store_fault){.stmt = -1, .nth = 1, .times = 1, .kind = 0};
	for (char *save = NULL, *kv = strtok_r(buf, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(kv, '=');
		if (!eq)
			goto bad;
		*eq = '\0';
		const char *k = kv, *v = eq + 1;
		char *end;
		if (strcmp(k, "stmt") == 0) {
			f->stmt = strcmp(v, "any") == 0 ? -1 : store_stmt_by_name(v);
			if (f->stmt < -1 || (f->stmt == -1 && strcmp(v, "any") != 0))
				return dbcron_err_set(err, DBCRON_EINVAL,
						      "DBCRON_TEST_FAULTS: unknown statement '%s'", v);
		} else if (strcmp(k, "kind") == 0) {
			f->kind = 0;
			for (int i = STORE_FAULT_BUSY; i <= STORE_FAULT_STALL; i++)
				if (strcmp(v, kinds[i]) == 0)
					f->kind = (store_fault_kind)i;
			if (!f->kind)
				return dbcron_err_set(err, DBCRON_EINVAL,
						      "DBCRON_TEST_FAULTS: unknown kind '%s'", v);
		} else if (strcmp(k, "file") == 0) {
			if (!*v || strlen(v) >= sizeof(f->file))
				goto bad;
			snprintf(f->file, sizeof(f->file), "%s", v);
		} else if (strcmp(k, "nth") == 0 || strcmp(k, "times") == 0 ||
			   strcmp(k, "stall") == 0) {
			long n = strtol(v, &end, 10);
			if (*end || end == v || n < 0)
				goto bad;
			if (k[0] == 'n')
				f->nth = n;
			else if (k[0] == 't')
				f->times = n;
			else
				f->stall_ms = n;
		} else {
			goto bad;
		}
	}
	if (!f->kind)
		goto bad;
	return DBCRON_OK;
bad:
	return dbcron_err_set(err, DBCRON_EINVAL,
			      "DBCRON_TEST_FAULTS: bad entry '%.*s' (want stmt=ID,kind=KIND"
			      "[,nth=N][,times=N][,stall=MS][,file=PATH])",
			      (int)len, spec);
}

int store_fault_add_spec(store *s, const char *spec, dbcron_err *err)
{
	for (const char *p = spec; p && *p;) {
		size_t len = strcspn(p, ";");
		if (len) {
			store_fault f;
			int rc = parse_one(p, len, &f, err);
			if (rc || (rc = store_fault_add(s, &f, err)))
				return rc;
		}
		p += len;
		if (*p)
			p++;
	}
	return DBCRON_OK;
}

static void sleep_ms(int64_t ms)
{
	struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0)
		;
}

int store__fault_before(store *s, int id, dbcron_err *err)
{
	struct store_faults *F = s->faults;
	F->reply_lost = false;
	for (size_t k = 0; k < F->n; k++) {
		const store_fault *f = &F->f[k];
		if (f->stmt != -1 && f->stmt != id)
			continue;
		/* A cut models a lost connection, whose server ends the open
		 * transaction: the rollback goes through (on SQLite a
		 * transaction left open would lock every other node out). */
		if (f->file[0] && (id == ST_ROLLBACK || access(f->file, F_OK) != 0))
			continue;
		long seen = ++F->seen[k];
		if ((f->nth && seen != f->nth && !(f->times != 1 && seen > f->nth)) ||
		    (f->times && F->fired[k] >= f->times))
			continue;
		F->fired[k]++;
		atomic_fetch_add(&F->hits, 1);
		const char *w = store_stmt_what(id);
		switch (f->kind) {
		case STORE_FAULT_STALL:
			sleep_ms(f->stall_ms);
			break;
		case STORE_FAULT_REPLY_LOST:
			F->reply_lost = true;
			break;
		case STORE_FAULT_BUSY:
			return dbcron_err_set(err, DBCRON_EBUSY, "%s: database is locked (fault injected)", w);
		case STORE_FAULT_CONN:
			return dbcron_err_set(err, DBCRON_ECONN,
					      "%s: lost the connection to the database (fault injected)", w);
		case STORE_FAULT_CONSTRAINT:
			return dbcron_err_set(err, DBCRON_ECONSTRAINT,
					      "%s: constraint violated (fault injected)", w);
		}
	}
	return DBCRON_OK;
}

int store__fault_after(store *s, int id, dbcron_err *err)
{
	if (!s->faults->reply_lost)
		return DBCRON_OK;
	s->faults->reply_lost = false;
	return dbcron_err_set(err, DBCRON_ECONN,
			      "%s: the reply was lost (fault injected; the statement ran)",
			      store_stmt_what(id));
}
