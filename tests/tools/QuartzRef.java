/*
 * Reference fire times for dbcron's cron engine tests, computed by Quartz
 * itself (org.quartz.CronExpression, Debian's libquartz2-java).
 *
 * Input, one case a line:   EXPR <TAB> ZONE <TAB> FROM_EPOCH_SEC <TAB> COUNT
 * Output, one case a line:  EXPR <TAB> ZONE <TAB> FROM <TAB> FIRES
 * FIRES is a comma-separated list of epoch seconds.  A last element "end"
 * means the expression has no fire after the one before it; an empty FIRES
 * means it never fires after FROM.  Lines starting with '#' and blank lines
 * are copied through.
 *
 * Quartz expressions (6 or 7 fields) go to Quartz unchanged.  Unix
 * expressions (5 fields or @macro) follow cronie (entry.c, crontab(5)); we
 * expand each field to its value set by cronie's rules (ranges a-b with
 * a <= b, steps only after a range or '*', names, 0 and 7 = Sunday) and let
 * Quartz do the calendar and zone work on explicit value lists.  Day rule
 * (cronie's cron.c): when the day-of-month or day-of-week field starts with
 * '*' (DOM_STAR / DOW_STAR, also set by @yearly @monthly @weekly) a day
 * must match both fields, otherwise either.  The OR case is the merged union
 * of two Quartz expressions; an AND of two restricted fields is the
 * day-of-week expression filtered by day of month.
 *
 * DST: dbcron follows cronie, not Quartz, around transitions.  Fires are
 * kept only while they stay more than MARGIN seconds before the first
 * transition of the zone after FROM - MARGIN; the list is cut there and
 * "end" is never claimed for a cut list.  A case left with no fire is
 * dropped (reported on stderr) unless Quartz says it never fires at all.
 */
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.ZoneId;
import java.time.zone.ZoneOffsetTransition;
import java.util.ArrayList;
import java.util.Calendar;
import java.util.Date;
import java.util.List;
import java.util.Locale;
import java.util.TimeZone;
import java.util.TreeSet;

import org.quartz.CronExpression;

public final class QuartzRef {
	static final long MARGIN = 3 * 3600;
	static int dropped, cut, cases;

	public static void main(String[] args) throws Exception {
		BufferedReader in = new BufferedReader(
			new InputStreamReader(System.in, StandardCharsets.UTF_8));
		PrintStream out = new PrintStream(System.out, true, "UTF-8");
		String line;
		int lineno = 0;
		while ((line = in.readLine()) != null) {
			lineno++;
			if (line.isEmpty() || line.startsWith("#")) {
				out.println(line);
				continue;
			}
			String[] f = line.split("\t", -1);
			if (f.length != 4)
				throw new IllegalArgumentException("line " + lineno + ": want 4 tab-separated fields: " + line);
			String r = one(f[0], f[1], Long.parseLong(f[2]), Integer.parseInt(f[3]));
			if (r == null) {
				dropped++;
				System.err.println("dropped (DST window): " + line);
				continue;
			}
			cases++;
			out.println(f[0] + "\t" + f[1] + "\t" + f[2] + "\t" + r);
		}
		System.err.println("QuartzRef: " + cases + " cases written, " + cut
			+ " cut before a DST transition, " + dropped + " dropped");
	}

	/* Fire source: the next fire strictly after t, or null. */
	interface Src {
		Long next(long t);
	}

	static Src quartz(String expr, TimeZone tz) throws Exception {
		CronExpression ce = new CronExpression(expr);
		ce.setTimeZone(tz);
		return t -> {
			Date d = ce.getNextValidTimeAfter(new Date(t * 1000L));
			return d == null ? null : d.getTime() / 1000L;
		};
	}

	static String one(String expr, String zone, long from, int count) throws Exception {
		TimeZone tz = TimeZone.getTimeZone(zone);
		if (!tz.getID().equals(zone))
			throw new IllegalArgumentException("unknown zone " + zone);
		Src src = expr.trim().split("\\s+").length == 5 || expr.startsWith("@")
			? unix(expr, tz) : quartz(expr, tz);

		ZoneOffsetTransition tr = ZoneId.of(zone).getRules()
			.nextTransition(Instant.ofEpochSecond(from - MARGIN));
		long cutoff = tr == null ? Long.MAX_VALUE : tr.getInstant().getEpochSecond() - MARGIN;

		List<String> fires = new ArrayList<>();
		long t = from;
		boolean wasCut = false;
		for (int i = 0; i < count; i++) {
			Long n = src.next(t);
			if (n == null) {
				fires.add("end");
				break;
			}
			if (n >= cutoff) {
				wasCut = true;
				break;
			}
			if (n <= t)
				throw new IllegalStateException("non-increasing fire for " + expr);
			fires.add(Long.toString(n));
			t = n;
		}
		if (fires.size() == 1 && fires.get(0).equals("end"))
			return "";
		if (fires.isEmpty())
			return null;
		if (wasCut)
			cut++;
		return String.join(",", fires);
	}

	/* ---- Unix (cronie) ---- */

	static final String[] MONTHS = {"jan", "feb", "mar", "apr", "may", "jun",
		"jul", "aug", "sep", "oct", "nov", "dec"};
	static final String[] DOWS = {"sun", "mon", "tue", "wed", "thu", "fri", "sat"};

	static int number(String s, int low, String[] names) {
		if (!s.isEmpty() && s.chars().allMatch(Character::isDigit))
			return Integer.parseInt(s);
		if (names != null)
			for (int i = 0; i < names.length; i++)
				if (names[i].equalsIgnoreCase(s))
					return i + low;
		throw new IllegalArgumentException("bad number/name '" + s + "'");
	}

	/* cronie get_list/get_range: returns the value set. */
	static TreeSet<Integer> field(String text, int low, int high, String[] names) {
		TreeSet<Integer> set = new TreeSet<>();
		for (String item : text.split(",", -1)) {
			String range = item, step = null;
			int slash = item.indexOf('/');
			if (slash >= 0) {
				range = item.substring(0, slash);
				step = item.substring(slash + 1);
			}
			int a, b;
			if (range.equals("*")) {
				a = low;
				b = high;
			} else if (range.indexOf('-') >= 0) {
				String[] ab = range.split("-", -1);
				a = number(ab[0], low, names);
				b = number(ab[1], low, names);
				if (a > b)
					throw new IllegalArgumentException("cronie rejects " + item);
			} else {
				if (step != null)
					throw new IllegalArgumentException("cronie rejects step after a number: " + item);
				a = b = number(range, low, names);
			}
			int st = step == null ? 1 : number(step, 0, null);
			if (st == 0)
				throw new IllegalArgumentException("cronie rejects step 0: " + item);
			for (int i = a; i <= b; i += st) {
				if (i < low || i > high)
					throw new IllegalArgumentException("out of range: " + item);
				set.add(i);
			}
		}
		return set;
	}

	static String list(TreeSet<Integer> s, int add) {
		TreeSet<Integer> t = new TreeSet<>();
		for (int v : s)
			t.add(v + add);
		StringBuilder b = new StringBuilder();
		for (int v : t) {
			if (b.length() > 0)
				b.append(',');
			b.append(v);
		}
		return b.toString();
	}

	static Src unix(String expr, TimeZone tz) throws Exception {
		String e = expr.trim();
		boolean domStar, dowStar;
		String[] f;
		switch (e.toLowerCase(Locale.ROOT)) {
		case "@yearly": case "@annually":
			/* cronie: dom {1}, month {1}, dow all, DOW_STAR */
			f = new String[] {"0", "0", "1", "1", "0-7"};
			domStar = false; dowStar = true;
			break;
		case "@monthly":
			f = new String[] {"0", "0", "1", "1-12", "0-7"};
			domStar = false; dowStar = true;
			break;
		case "@weekly":
			/* cronie: dom all, dow {0}, DOW_STAR */
			f = new String[] {"0", "0", "1-31", "1-12", "0"};
			domStar = false; dowStar = true;
			break;
		case "@daily": case "@midnight":
			f = new String[] {"0", "0", "1-31", "1-12", "0-7"};
			domStar = false; dowStar = false;
			break;
		case "@hourly":
			f = new String[] {"0", "0-23", "1-31", "1-12", "0-7"};
			domStar = false; dowStar = false;
			break;
		default:
			if (e.startsWith("@"))
				throw new IllegalArgumentException("unknown macro " + e);
			f = e.split("\\s+");
			domStar = f[2].startsWith("*");
			dowStar = f[4].startsWith("*");
		}
		TreeSet<Integer> min = field(f[0], 0, 59, null);
		TreeSet<Integer> hour = field(f[1], 0, 23, null);
		TreeSet<Integer> dom = field(f[2], 1, 31, null);
		TreeSet<Integer> mon = field(f[3], 1, 12, MONTHS);
		TreeSet<Integer> dow0 = field(f[4], 0, 7, DOWS);
		TreeSet<Integer> dow = new TreeSet<>();
		for (int d : dow0)
			dow.add(d == 7 ? 0 : d);	/* cronie: make sundays equivalent */

		String head = "0 " + list(min, 0) + " " + list(hour, 0) + " ";
		String ml = list(mon, 0);
		boolean domAll = dom.size() == 31, dowAll = dow.size() == 7;
		Src byDom = quartz(head + list(dom, 0) + " " + ml + " ?", tz);
		Src byDow = quartz(head + "? " + ml + " " + list(dow, 1), tz);

		if (domStar || dowStar) {
			/* AND */
			if (dowAll)
				return byDom;
			if (domAll)
				return byDow;
			return t -> {
				Long n = t;
				/* bounded: each step advances at least one matching day */
				for (int i = 0; i < 100000; i++) {
					n = byDow.next(n);
					if (n == null)
						return null;
					Calendar c = Calendar.getInstance(tz);
					c.setTimeInMillis(n * 1000L);
					if (dom.contains(c.get(Calendar.DAY_OF_MONTH)))
						return n;
				}
				throw new IllegalStateException("no AND match for " + expr);
			};
		}
		/* OR */
		return t -> {
			Long a = byDom.next(t), b = byDow.next(t);
			if (a == null)
				return b;
			if (b == null)
				return a;
			return Math.min(a, b);
		};
	}
}
