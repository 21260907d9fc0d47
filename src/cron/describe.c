/*
 * dbcron_cron_describe: the parsed items of an expression in English.
 *
 * Works from the items the parser kept (not from the bitsets), so the
 * words follow what the user wrote: "every 5th minute", "Monday to
 * Friday", "on the last Friday of the month".  Output is built in a
 * bounded local buffer and copied, truncated, to the caller's.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cron/cron_int.h"

struct sbuf {
	char b[4096];
	size_t n;
};

static void put(struct sbuf *s, const char *fmt, ...) DBCRON_PRINTF(2, 3);

static void put(struct sbuf *s, const char *fmt, ...)
{
	va_list ap;

	if (s->n >= sizeof(s->b) - 1)
		return;
	va_start(ap, fmt);
	int r = vsnprintf(s->b + s->n, sizeof(s->b) - s->n, fmt, ap);
	va_end(ap);
	if (r > 0)
		s->n += (size_t)r < sizeof(s->b) - s->n ? (size_t)r : sizeof(s->b) - 1 - s->n;
}

static const char *const unit[CF_COUNT] = {"second", "minute", "hour", "day of the month",
					   "month", "day of the week", "year"};
static const char *const units[CF_COUNT] = {"seconds", "minutes", "hours", "days",
					    "months", "days", "years"};
static const char *const month_name[13] = {"", "January", "February", "March", "April",
					   "May", "June", "July", "August", "September",
					   "October", "November", "December"};
static const char *const day_name[8] = {"Sunday", "Monday", "Tuesday", "Wednesday",
					"Thursday", "Friday", "Saturday", "Sunday"};

static const char *ord_suffix(int n)
{
	if (n % 100 >= 11 && n % 100 <= 13)
		return "th";
	switch (n % 10) {
	case 1:
		return "st";
	case 2:
		return "nd";
	case 3:
		return "rd";
	default:
		return "th";
	}
}

static void put_value(struct sbuf *s, const dbcron_cron *c, int f, int v)
{
	if (f == CF_MON)
		put(s, "%s", month_name[v]);
	else if (f == CF_DOW)
		put(s, "%s", day_name[c->dialect == DBCRON_CRON_QUARTZ ? v - 1 : v]);
	else
		put(s, "%d", v);
}

/* An H item says so after its value: "at minute 17 (H)". */
static void put_h(struct sbuf *s, const struct cron_item *it)
{
	if (it->h)
		put(s, " (H)");
}

static bool named(int f)
{
	return f == CF_MON || f == CF_DOW || f == CF_YEAR;
}

/* One list element as a phrase. */
static void put_item(struct sbuf *s, const dbcron_cron *c, const struct cron_item *it)
{
	int f = it->field;

	switch (it->kind) {
	case CI_STAR:
		if (it->step == 1)
			put(s, "every %s", unit[f]);
		else
			put(s, "every %d%s %s", it->step, ord_suffix(it->step), unit[f]);
		break;
	case CI_VALUE:
		if (!named(f))
			put(s, "%s ", f == CF_DOM ? "day" : unit[f]);
		put_value(s, c, f, it->lo);
		put_h(s, it);
		break;
	case CI_RANGE:
	case CI_FROM:
		if (it->step == 1 && named(f)) {
			put_value(s, c, f, it->lo);
			put(s, " to ");
			put_value(s, c, f, it->hi);
			break;
		}
		if (it->step == 1)
			put(s, "every %s from ", unit[f]);
		else
			put(s, "every %d%s %s from ", it->step, ord_suffix(it->step), unit[f]);
		put_value(s, c, f, it->lo);
		put(s, " through ");
		put_value(s, c, f, it->hi);
		put_h(s, it);
		break;
	default:
		break;
	}
}

static bool all_values(const dbcron_cron *c, int f)
{
	for (unsigned i = c->first[f]; i < c->first[f + 1]; i++)
		if (c->items[i].kind != CI_VALUE)
			return false;
	return true;
}

static unsigned count(const dbcron_cron *c, int f)
{
	return (unsigned)(c->first[f + 1] - c->first[f]);
}

static bool is_star(const dbcron_cron *c, int f)
{
	return count(c, f) == 1 && c->items[c->first[f]].kind == CI_STAR &&
	       c->items[c->first[f]].step == 1;
}

static void put_list(struct sbuf *s, const dbcron_cron *c, int f)
{
	unsigned n = count(c, f), b = c->first[f];

	if (n > 1 && all_values(c, f)) {
		if (!named(f))
			put(s, "%s ", units[f]);
		for (unsigned i = 0; i < n; i++) {
			if (i)
				put(s, i + 1 == n ? " and " : ", ");
			put_value(s, c, f, c->items[b + i].lo);
			put_h(s, &c->items[b + i]);
		}
		return;
	}
	for (unsigned i = 0; i < n; i++) {
		if (i)
			put(s, i + 1 == n ? " and " : ", ");
		put_item(s, c, &c->items[b + i]);
	}
}

static bool single(const dbcron_cron *c, int f)
{
	return count(c, f) == 1 && c->items[c->first[f]].kind == CI_VALUE;
}

static bool specific(const dbcron_cron *c, int f)
{
	return all_values(c, f);
}

static void put_time(struct sbuf *s, const dbcron_cron *c)
{
	bool quartz = c->dialect == DBCRON_CRON_QUARTZ;
	int fine = quartz ? CF_SEC : CF_MIN;
	const struct cron_item *it = c->items;

	if (single(c, CF_HOUR) && single(c, CF_MIN) && (!quartz || single(c, CF_SEC))) {
		put(s, "at %02d:%02d", it[c->first[CF_HOUR]].lo, it[c->first[CF_MIN]].lo);
		if (quartz)
			put(s, ":%02d", it[c->first[CF_SEC]].lo);
		if (it[c->first[CF_HOUR]].h || it[c->first[CF_MIN]].h ||
		    (quartz && it[c->first[CF_SEC]].h))
			put(s, " (H)");
		return;
	}
	/* The coarsest field that is not a bare '*'; coarser ones are
	 * implied ("every 5th minute" needs no "of every hour"), except one
	 * just above a specific value ("at minute 0 of every hour"). */
	int top = -1;
	for (int f = CF_HOUR; f >= fine; f--)
		if (!is_star(c, f)) {
			top = f;
			break;
		}
	if (top < 0) {
		put(s, "every %s", unit[fine]);
		return;
	}
	int last = top;
	if (top < CF_HOUR && specific(c, top))
		last = top + 1;
	for (int f = fine; f <= last; f++) {
		if (f > fine)
			put(s, " of ");
		if (f == fine && specific(c, f))
			put(s, "at ");
		put_list(s, c, f);
	}
}

static void put_dom(struct sbuf *s, const dbcron_cron *c)
{
	const struct cron_item *it = &c->items[c->first[CF_DOM]];

	if (it->kind == CI_LAST) {
		if (it->w && !it->arg)
			put(s, "on the last weekday of the month");
		else if (it->w)
			put(s, "on the weekday nearest the last day of the month minus %d day%s", it->arg, it->arg == 1 ? "" : "s");
		else if (it->arg)
			put(s, "on the last day of the month minus %d day%s", it->arg,
			    it->arg == 1 ? "" : "s");
		else
			put(s, "on the last day of the month");
		return;
	}
	if (it->kind == CI_NEAR) {
		put(s, "on the weekday nearest day %d of the month", it->lo);
		return;
	}
	put(s, "on ");
	put_list(s, c, CF_DOM);
	if (all_values(c, CF_DOM))
		put(s, " of the month");
}

static void put_dow(struct sbuf *s, const dbcron_cron *c)
{
	const struct cron_item *it = &c->items[c->first[CF_DOW]];
	int v = it->lo - 1;

	if (it->kind == CI_LASTWD) {
		put(s, "on the last %s of the month", day_name[v]);
		return;
	}
	if (it->kind == CI_NTH) {
		put(s, "on the %d%s %s of the month", it->arg, ord_suffix(it->arg), day_name[v]);
		return;
	}
	if (count(c, CF_DOW) == 1 && it->kind == CI_RANGE && it->step == 1) {
		put_item(s, c, it);
		return;
	}
	put(s, "on ");
	put_list(s, c, CF_DOW);
}

static void put_days(struct sbuf *s, const dbcron_cron *c)
{
	const struct cron_item *dom = &c->items[c->first[CF_DOM]];
	const struct cron_item *dow = &c->items[c->first[CF_DOW]];
	bool dom_all = dom->kind == CI_ANY || is_star(c, CF_DOM);
	bool dow_all = dow->kind == CI_ANY || is_star(c, CF_DOW);

	if (dom_all && dow_all) {
		put(s, "every day");
	} else if (dow_all) {
		put_dom(s, c);
	} else if (dom_all) {
		put_dow(s, c);
	} else {
		/* Unix only: cronie's OR unless a field starts with '*'. */
		put_dom(s, c);
		put(s, c->dom_star || c->dow_star ? " if it is also " : " or ");
		if (c->dom_star || c->dow_star) {
			put_list(s, c, CF_DOW);
		} else {
			put_dow(s, c);
		}
	}
}

size_t dbcron_cron_describe(const dbcron_cron *c, char *buf, size_t len)
{
	struct sbuf s;

	s.n = 0;
	s.b[0] = '\0';
	put_time(&s, c);
	put(&s, ", ");
	put_days(&s, c);
	if (!is_star(c, CF_MON)) {
		put(&s, ", in ");
		put_list(&s, c, CF_MON);
	}
	if (count(c, CF_YEAR) && !is_star(c, CF_YEAR)) {
		put(&s, ", in ");
		put_list(&s, c, CF_YEAR);
	}
	if (c->text[0] == '@')
		put(&s, " (%s)", c->text);
	if (len) {
		size_t k = s.n < len - 1 ? s.n : len - 1;
		memcpy(buf, s.b, k);
		buf[k] = '\0';
	}
	return s.n;
}
