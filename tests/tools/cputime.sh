#!/usr/bin/env bash
# Runs one test and, when DBCRON_TEST_CPU_DIR is set (scripts/test.sh sets
# it), writes the CPU time of the processes it ran there, so that the run
# can say which tests cost the machine most, not only which took longest
# (on two cores side by side, the first is what the budget is made of).
# Counted: every process the test waited for, user and system time; not
# the database servers' own processes.
#   tests/tools/cputime.sh NAME CMD [ARGS...]
name=$1
shift
"$@"
rc=$?
if [ -n "${DBCRON_TEST_CPU_DIR:-}" ] && [ -d "$DBCRON_TEST_CPU_DIR" ]; then
	# the second line of `times`: the children's user and system time (the
	# builtin is run here, not in a pipeline's subshell, which has none)
	raw=$DBCRON_TEST_CPU_DIR/.$name
	times >"$raw"
	sed -n '2s/^\([0-9]*\)m\([0-9.]*\)s \([0-9]*\)m\([0-9.]*\)s$/\1 \2 \3 \4/p' "$raw" |
		awk -v n="$name" '{ printf "%.1f %s\n", $1 * 60 + $2 + $3 * 60 + $4, n }' \
			>"$DBCRON_TEST_CPU_DIR/$name" || true
	rm -f "$raw"
fi
exit "$rc"
