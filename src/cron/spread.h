/*
 * The arithmetic of H (cron fields) and --spread (fixed-rate jobs): a
 * 64-bit seed per job, mixed with a salt per use, gives each use a value
 * that is the same on every node and across restarts.  Pure functions; the
 * seed itself is chosen and stored by the app layer (app/spread.c), which
 * levels the jobs of one schedule over the values.
 */
#ifndef DBCRON_CRON_SPREAD_H
#define DBCRON_CRON_SPREAD_H

#include <stdint.h>

#include "dbcron/cron.h"

/* The salt of --spread's offset (the cron fields use 0..6). */
#define DBCRON_SPREAD_SALT_EVERY 7

/* A value in [0, 2^64) from seed and salt: splitmix64's finaliser over
 * seed + (salt + 1) * golden ratio, so seed and seed + 1 give unrelated
 * values (the leveling probes consecutive seeds). */
uint64_t dbcron__spread_mix(uint64_t seed, int salt);

/* The starting seed of a job name: FNV-1a 64 of its bytes through the
 * same finaliser, in [0, 2^63) so it fits a signed BIGINT column. */
int64_t dbcron__spread_name_seed(const char *name);

/* The H item of the finest field that has one: its field (the salt of
 * its value) in *field, and the number of values H chose among returned
 * (its value's index is mix(seed, field) % that); 0 when c has no H.
 * What the app layer levels a schedule's jobs over (app/spread.c). */
int dbcron__cron_h_slots(const dbcron_cron *c, int *field);

/* --spread: the bucket width of a spread of spread_ms (spread / 60 or
 * 1 s, whichever is larger; the whole spread when it is shorter than
 * 1 s) and the number of buckets. */
int64_t dbcron__spread_bucket_ms(int64_t spread_ms, int64_t *nbuckets);

/* --spread: the offset in [0, spread_ms) that seed gives (a bucket's
 * start); 0 when spread_ms <= 0 or seed < 0. */
int64_t dbcron__spread_offset_ms(int64_t seed, int64_t spread_ms);

#endif
