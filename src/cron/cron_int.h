/*
 * Internal layout of a parsed cron expression and of a time zone, shared by
 * parse.c (text -> bitsets), next.c (bitsets -> next fire), describe.c
 * (items -> English) and tz.c (GLib -> transition table).
 */
#ifndef DBCRON_CRON_INT_H
#define DBCRON_CRON_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "dbcron/cron.h"

/* Field kinds, in Quartz order.  Unix expressions use MIN..DOW. */
enum cron_field {
	CF_SEC,
	CF_MIN,
	CF_HOUR,
	CF_DOM,
	CF_MON,
	CF_DOW,
	CF_YEAR,
	CF_COUNT
};

/* One element of a comma list, kept for describe(). */
enum cron_item_kind {
	CI_STAR,   /* '*' or '*' / step: lo..hi step */
	CI_ANY,    /* '?' */
	CI_VALUE,  /* lo */
	CI_RANGE,  /* lo-hi[/step]; may wrap (Quartz) when lo > hi */
	CI_FROM,   /* lo/step (Quartz): lo..max step */
	CI_LAST,   /* dom L or L-n (n in arg); weekday flag in w */
	CI_NEAR,   /* dom nW (n in lo) */
	CI_LASTWD, /* dow nL: last weekday lo of the month */
	CI_NTH,    /* dow n#k: k-th (arg) weekday lo of the month */
};

struct cron_item {
	uint8_t field;
	uint8_t kind;
	uint8_t w;     /* CI_LAST: nearest weekday (LW, L-nW) */
	uint8_t step;  /* 1 unless a step was given */
	uint8_t h;     /* from H: 0, else the number of values H chose among */
	int16_t lo, hi;
	int16_t arg;
};

/* Day-of-month and day-of-week rules that are not plain sets. */
enum cron_dom_rule { DOM_SET, DOM_ANY, DOM_LAST, DOM_NEAR };
enum cron_dow_rule { DOW_SET, DOW_ANY, DOW_LASTWD, DOW_NTH };

struct dbcron_cron {
	dbcron_cron_dialect dialect;
	bool wild;       /* minute or hour field starts with '*' (DST rule c) */
	bool dom_star;   /* cronie DOM_STAR: field starts with '*' */
	bool dow_star;   /* cronie DOW_STAR */
	bool any_year;   /* no year field, or '*' */
	bool possible;   /* some (month, year shape) has a matching day */
	uint8_t nfields;
	uint64_t sec, min, hour; /* bit n = value n */
	uint16_t mon;            /* bits 1..12 */
	uint64_t years[3];       /* bit (y - 1970), 1970..2099 */
	int year_min, year_max;
	/* Matching days of a month, by [length - 28][weekday of the 1st]
	 * (0 = Sunday): every rule (L, W, #, the cronie OR) depends only
	 * on these two, so next() never evaluates rules, it looks up. */
	uint32_t dmask[4][7];
	/* Months with at least one matching day, by [leap][weekday of
	 * Jan 1], already filtered by the month field. */
	uint16_t ymask[2][7];
	char *text;              /* the expression as given, trimmed */
	uint16_t nitems;
	uint16_t first[CF_COUNT + 1]; /* items of field f: first[f]..first[f+1] */
	struct cron_item items[];
};

/*
 * Offsets as a sorted table of UTC instants where the offset changes,
 * built once from GLib at open and immutable after, so lookups are a
 * binary search without locks or GLib's linear interval scan.
 * Interval k covers [at[k-1], at[k]) and has offset off[k] (at[-1] = -inf,
 * at[n] = +inf); off has n + 1 entries.
 */
struct dbcron_tz {
	struct dbcron_tz *next; /* the interned list (tz.c) */
	char *name;
	uint32_t n;
	int64_t *at;
	int32_t *off;
};

/* Interval index of UTC instant t: the number of transitions <= t. */
uint32_t dbcron__tz_interval(const dbcron_tz *tz, int64_t t);

/*
 * True when data[0, len) is a TZif file (RFC 8536, versions 1-4) whose
 * every count, index and offset is in bounds (tzif.c lists the checks), so
 * GLib can read it safely.  Otherwise false, with what is wrong in why
 * (a sentence without the file's name; cap may be 0).
 */
bool dbcron__tzif_check(const unsigned char *data, size_t len, char *why, size_t cap);

#endif
