/*
 * The seeds of H and --spread (docs/cron.md "H: spread by name"): chosen
 * for a job when it is created or its schedule changes, then stored with
 * it and never chosen again, so that every node, every restart and every
 * edit of another field sees the same fire times.
 *
 * Why a stored, chosen seed and not a hash of the name alone: a hash is
 * stable but not level (1,000 names over 60 minutes give 8 to 27 jobs a
 * minute).  So the name's hash is only where the choice starts: seed,
 * seed + 1, ... are tried (a bounded number, 4 per slot) and the first
 * whose slot (the finest H field's value, or --spread's bucket) is least
 * used among the stored jobs with the same schedule and the jobs before it
 * in the same batch wins.  Deterministic: the same jobs applied to the
 * same database choose the same seeds.  The loads are counted from one
 * read of the stored jobs, before the write's transaction: two applies at
 * once may level a little worse, never wrongly.
 */
#include <limits.h>
#include <string.h>

#include "app/app_int.h"
#include "core/alloc.h"
#include "cron/spread.h"
#include "dbcron/cron.h"
#include "model/jobdef.h"

/* How many seeds are tried per slot of the schedule. */
#define PROBES_PER_SLOT 4

/* What one schedule levels over. */
typedef struct shape {
	int nslots; /* 0: nothing to level (no H, no --spread) */
	int field;  /* cron: the finest H field; -1: --spread's buckets */
} shape;

static shape shape_of(const dbcron_job *j)
{
	shape sh = {0, -1};
	if (j->kind == DBCRON_SCHED_EVERY && j->spread_ms > 0) {
		int64_t n;
		dbcron__spread_bucket_ms(j->spread_ms, &n);
		sh.nslots = n > INT_MAX ? INT_MAX : (int)n;
	} else if (j->kind == DBCRON_SCHED_CRON && j->spec) {
		dbcron_cron *c = NULL;
		dbcron_err e = {0};
		/* an expression that does not parse is refused by validation */
		if (!dbcron_cron_parse_seeded(j->spec, 0, &c, &e))
			sh.nslots = dbcron__cron_h_slots(c, &sh.field);
		dbcron_cron_free(c);
	}
	return sh;
}

static int slot_of(const shape *sh, int64_t seed)
{
	int salt = sh->field < 0 ? DBCRON_SPREAD_SALT_EVERY : sh->field;
	return (int)(dbcron__spread_mix((uint64_t)seed, salt) % (uint64_t)sh->nslots);
}

/* Same schedule for leveling: the jobs that compete for the same slots. */
static bool same_sched(const dbcron_job *a, const dbcron_job *b)
{
	return a->kind == b->kind && a->spec && b->spec && strcmp(a->spec, b->spec) == 0 &&
	       a->spread_ms == b->spread_ms;
}

/* One schedule among the batch's jobs that need a seed, with its loads. */
typedef struct group {
	const dbcron_job *rep;
	shape sh;
	int *load;
} group;

typedef struct groups {
	group *v;
	size_t n, cap;
} groups;

static group *find_group(const groups *g, const dbcron_job *j)
{
	for (size_t i = 0; i < g->n; i++)
		if (same_sched(g->v[i].rep, j))
			return &g->v[i];
	return NULL;
}

static int add_group(groups *g, const dbcron_job *j, shape sh)
{
	if (find_group(g, j))
		return DBCRON_OK;
	if (dbcron__grow((void **)&g->v, &g->cap, g->n + 1, sizeof(*g->v)))
		return DBCRON_ENOMEM;
	group *n = &g->v[g->n];
	n->rep = j;
	n->sh = sh;
	if (!(n->load = dbcron__calloc((size_t)sh.nslots, sizeof(int))))
		return DBCRON_ENOMEM;
	g->n++;
	return DBCRON_OK;
}

static void count(groups *g, const dbcron_job *j)
{
	group *gr = j->spread_seed >= 0 ? find_group(g, j) : NULL;
	if (gr)
		gr->load[slot_of(&gr->sh, j->spread_seed)]++;
}

static void groups_free(groups *g)
{
	for (size_t i = 0; i < g->n; i++)
		dbcron__free(g->v[i].load);
	dbcron__free(g->v);
}

static const dbcron_job *find_job(const job_vec *jv, const char *name)
{
	dbcron_job key = {.name = (char *)name};
	return jv && jv->n ? bsearch(&key, jv->v, jv->n, sizeof(*jv->v), app__cmp_job_name)
			   : NULL;
}

/* The first least-used seed from the name's hash on. */
static int64_t choose(const group *gr, const char *name)
{
	int64_t seed = dbcron__spread_name_seed(name), best = seed;
	int best_load = INT_MAX;
	for (int k = 0; k < PROBES_PER_SLOT * gr->sh.nslots; k++) {
		int64_t cand = (int64_t)(((uint64_t)seed + (uint64_t)k) & (UINT64_MAX >> 1));
		int l = gr->load[slot_of(&gr->sh, cand)];
		if (l < best_load) {
			best = cand;
			best_load = l;
		}
	}
	return best;
}

/*
 * Which definitions keep a seed (given, or the stored job's with the
 * same schedule), which have none (nothing to spread), and which need one
 * chosen (need[i]); returns how many need one.
 */
static size_t decide(model_jobdef *defs, size_t n, const job_vec *prevs, bool *need)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		dbcron_job *j = &defs[i].job;
		const dbcron_job *prev = find_job(prevs, j->name);
		need[i] = false;
		if (defs[i].seen[MODEL_JK_SPREAD_SEED])
			continue; /* as given: an exported file keeps its offsets */
		if (prev && prev->spread_seed >= 0 && same_sched(prev, j)) {
			j->spread_seed = prev->spread_seed;
			continue;
		}
		j->spread_seed = -1;
		if (shape_of(j).nslots > 0) {
			need[i] = true;
			k++;
		}
	}
	return k;
}

int app__spread_seeds(store *s, model_jobdef *defs, size_t n, const job_vec *prevs,
		      dbcron_err *err)
{
	job_vec all = {0};
	groups g = {0};
	bool *need = dbcron__calloc(n ? n : 1, sizeof(bool));
	int rc = DBCRON_ENOMEM;
	if (!need)
		goto out_oom;
	if (!decide(defs, n, prevs, need)) {
		rc = DBCRON_OK;
		goto out_free;
	}
	for (size_t i = 0; i < n; i++)
		if (need[i] && add_group(&g, &defs[i].job, shape_of(&defs[i].job)))
			goto out_oom;
	/* the stored jobs the batch does not replace, then the batch's own
	 * seeds that are kept, then the new ones in batch order */
	if ((rc = app_jobs_sorted(s, &all, err)))
		goto out_free;
	for (size_t i = 0; i < all.n; i++) {
		bool replaced = false;
		for (size_t b = 0; b < n && !replaced; b++)
			replaced = strcmp(defs[b].job.name, all.v[i].name) == 0;
		if (!replaced)
			count(&g, &all.v[i]);
	}
	for (size_t i = 0; i < n; i++)
		if (!need[i])
			count(&g, &defs[i].job);
	for (size_t i = 0; i < n; i++) {
		if (!need[i])
			continue;
		group *gr = find_group(&g, &defs[i].job);
		defs[i].job.spread_seed = choose(gr, defs[i].job.name);
		count(&g, &defs[i].job);
	}
	rc = DBCRON_OK;
	goto out_free;
out_oom:
	rc = dbcron_err_set(err, DBCRON_ENOMEM, "out of memory choosing spread seeds");
out_free:
	groups_free(&g);
	app_job_vec_free(&all);
	dbcron__free(need);
	return rc;
}
