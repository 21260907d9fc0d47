/*
 * H and --spread: the seed arithmetic (spread.h).  Owns nothing; every
 * function is pure, so two nodes given one seed compute one value.
 */
#include "cron/spread.h"

static uint64_t finalise(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

uint64_t dbcron__spread_mix(uint64_t seed, int salt)
{
	return finalise(seed + 0x9E3779B97F4A7C15ULL * (uint64_t)(salt + 1));
}

int64_t dbcron__spread_name_seed(const char *name)
{
	uint64_t h = 0xCBF29CE484222325ULL;
	for (const unsigned char *p = (const unsigned char *)name; p && *p; p++) {
		h ^= *p;
		h *= 0x100000001B3ULL;
	}
	return (int64_t)(finalise(h) >> 1);
}

int64_t dbcron__spread_bucket_ms(int64_t spread_ms, int64_t *nbuckets)
{
	int64_t b = spread_ms / 60 > 1000 ? spread_ms / 60 : 1000;
	if (b > spread_ms)
		b = spread_ms > 0 ? spread_ms : 1;
	*nbuckets = spread_ms > 0 ? spread_ms / b : 1;
	return b;
}

int64_t dbcron__spread_offset_ms(int64_t seed, int64_t spread_ms)
{
	int64_t n;
	if (spread_ms <= 0 || seed < 0)
		return 0;
	int64_t b = dbcron__spread_bucket_ms(spread_ms, &n);
	return (int64_t)(dbcron__spread_mix((uint64_t)seed, DBCRON_SPREAD_SALT_EVERY) % (uint64_t)n) * b;
}
