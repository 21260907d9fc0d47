#!/usr/bin/env bash
# The mutation check (docs/testing.md): plant each small bug of
# tests/mutants/mutants.tsv, one at a time, in a scratch copy of the tree,
# rebuild, run the tests that must catch it, and report killed or SURVIVED
# with a score.
#
#   scripts/mutate.sh [--subset ci] [--no-baseline] [--keep] [IDS...]
#   scripts/mutate.sh --check       only check that every mutant's text is
#                                   in its file exactly once (no build)
#
# The tree is copied once (without .git and build*/), configured and built
# once; each mutant is applied, rebuilt incrementally, its tests run with
# `ctest -R REGEX --timeout`, and the file restored.  Before the first
# mutant the selected tests run once unmutated (the baseline): a test that
# fails without any bug would make every mutant look killed.  A private
# PostgreSQL (MariaDB) server is started when a selected mutant names a test
# labelled pg (mysql), as scripts/test.sh does.
#
# One line per mutant: killed (and by which tests), SURVIVED, kept (a
# survivor the list keeps on purpose, with its reason), stale text (the text
# to replace is not in the file exactly once: the code moved, update the
# list), build error, no tests (the regex matches no test).  The last line
# is "killed K of N".  Exit status 0 only when every requested mutant was
# killed (kept survivors do not count against it); 1 otherwise; 2 on a
# usage or setup error.
#
# Environment: MUTATE_TIMEOUT (seconds per test, default 300), MUTATE_JOBS
# (build jobs, default 2), TMPDIR (where the scratch copy goes).
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
list=$src/tests/mutants/mutants.tsv
timeout=${MUTATE_TIMEOUT:-300}
jobs=${MUTATE_JOBS:-2}
subset="" baseline=1 keep=0 check_only=0
ids=()

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
  --subset) [ $# -ge 2 ] || usage; subset=$2; shift 2 ;;
  --no-baseline) baseline=0; shift ;;
  --keep) keep=1; shift ;;
  --check) check_only=1; shift ;;
  -h|--help) usage ;;
  -*) echo "mutate: unknown option '$1'" >&2; exit 2 ;;
  *) ids+=("$1"); shift ;;
  esac
done
command -v python3 >/dev/null || { echo "mutate: python3 is required (scripts/deps.sh)" >&2; exit 2; }

# tool.py: the list's parser and the text replacement, in one place.
tool=$(mktemp /tmp/dbcron-mutate-tool.XXXXXX.py)
cat >"$tool" <<'PY'
import sys

def unescape(s):
    out, i = [], 0
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s):
            n = s[i + 1]
            out.append({"n": "\n", "t": "\t", "\\": "\\"}.get(n, "\\" + n))
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)

def read_list(path):
    rows, seen = [], set()
    with open(path, encoding="utf-8") as f:
        for ln, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.startswith("#"):
                continue
            cols = line.split("\t")
            if len(cols) != 7:
                sys.exit("%s:%d: expected 7 tab-separated columns, found %d" % (path, ln, len(cols)))
            mid, mset, fname, tests, frm, to, why = cols
            if mid in seen:
                sys.exit("%s:%d: mutant id '%s' is listed twice" % (path, ln, mid))
            if mset not in ("ci", "-", "kept"):
                sys.exit("%s:%d: set must be ci, - or kept, not '%s'" % (path, ln, mset))
            if not (mid and fname and tests and frm and why):
                sys.exit("%s:%d: empty column" % (path, ln))
            seen.add(mid)
            rows.append(dict(id=mid, set=mset, file=fname, tests=tests,
                             frm=unescape(frm), to=unescape(to), why=why))
    return rows

def select(rows, subset, ids):
    if ids:
        known = {r["id"]: r for r in rows}
        bad = [i for i in ids if i not in known]
        if bad:
            sys.exit("no mutant named %s in the list" % ", ".join(bad))
        return [known[i] for i in ids]
    if subset:
        return [r for r in rows if r["set"] == subset]
    return rows

def count(root, r):
    try:
        with open(root + "/" + r["file"], encoding="utf-8") as f:
            return f.read().count(r["frm"])
    except FileNotFoundError:
        return -1

cmd = sys.argv[1]
if cmd == "select":  # select LIST ROOT SUBSET [IDS...] -> id \t set \t file \t tests \t count
    rows = select(read_list(sys.argv[2]), sys.argv[4], sys.argv[5:])
    for r in rows:
        print("\t".join([r["id"], r["set"], r["file"], r["tests"], str(count(sys.argv[3], r))]))
elif cmd == "why":  # why LIST ID
    print([r for r in read_list(sys.argv[2]) if r["id"] == sys.argv[3]][0]["why"])
elif cmd == "apply":  # apply LIST ROOT ID: replace the one occurrence in place
    r = [r for r in read_list(sys.argv[2]) if r["id"] == sys.argv[4]][0]
    path = sys.argv[3] + "/" + r["file"]
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if text.count(r["frm"]) != 1:
        sys.exit(3)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text.replace(r["frm"], r["to"], 1))
PY

scratch=""
source "$src/scripts/servers.bash"
cleanup() {
  servers_stop
  rm -f "$tool"
  if [ -n "$scratch" ]; then
    if [ "$keep" -eq 1 ]; then echo "mutate: scratch tree kept in $scratch" >&2; else rm -rf "$scratch"; fi
  fi
}
trap cleanup EXIT

sel=$(python3 "$tool" select "$list" "$src" "$subset" "${ids[@]}") || exit 2
[ -n "$sel" ] || { echo "mutate: no mutant selected" >&2; exit 2; }
n_sel=$(grep -c . <<<"$sel")

if [ "$check_only" -eq 1 ]; then
  stale=0
  while IFS=$'\t' read -r id _ file _ cnt; do
    if [ "$cnt" != 1 ]; then
      [ "$cnt" = -1 ] && echo "stale text  $id: $file does not exist" ||
        echo "stale text  $id: found $cnt times in $file (must be exactly once)"
      stale=$((stale + 1))
    fi
  done <<<"$sel"
  echo "mutate: $((n_sel - stale)) of $n_sel mutants current"
  [ "$stale" -eq 0 ]
  exit
fi

scratch=$(mktemp -d "${TMPDIR:-/tmp}/dbcron-mutate.XXXXXX")
# tests that switch to another user (nobody) run the build's dbcron-guard
# as that user: the scratch tree must be enterable like a checkout
chmod 755 "$scratch"
tree=$scratch/tree
build=$scratch/build
logs=$scratch/logs
mkdir -p "$tree" "$logs"
echo "mutate: $n_sel mutants; scratch tree $scratch" >&2
tar -C "$src" --exclude=./.git --exclude='./build*' -cf - . | tar -C "$tree" -xf -
cmake -S "$tree" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDBCRON_WERROR=OFF -DDBCRON_FAULT_SEAM=ON \
  >"$logs/configure.log" 2>&1 || { tail -n 30 "$logs/configure.log" >&2; exit 2; }
cmake --build "$build" -j"$jobs" >"$logs/build.log" 2>&1 ||
  { tail -n 30 "$logs/build.log" >&2; echo "mutate: the unmutated tree does not build" >&2; exit 2; }

ctest_count() { (cd "$build" && ctest -N "$@" | sed -n 's/^Total Tests: //p'); }
ctest_names() { (cd "$build" && ctest -N -R "$1" | sed -n 's/^ *Test *#[0-9]*: //p'); }
# Every test some selected mutant names, as one regex of names (CMake's
# regex engine allows only a few groups, so the mutants' own regexes cannot
# simply be joined).
union=$(cut -f4 <<<"$sel" | sort -u | while IFS= read -r re; do ctest_names "$re"; done |
  sort -u | paste -sd'|')
union="^($union)\$"
servers_start "$build" 0 -R "$union"

# run_tests REGEX LOG: the named tests, stopping at the first failure.
run_tests() {
  (cd "$build" && ctest -R "$1" --timeout "$timeout" --stop-on-failure --output-on-failure) >"$2" 2>&1 &&
    ! grep -q '^No tests were found' "$2"
}
failed_names() { sed -n 's/^[[:space:]]*[0-9][0-9]* - \([^ ]*\) .*/\1/p' "$1" | paste -sd, -; }

if [ "$baseline" -eq 1 ]; then
  echo "mutate: baseline: the selected tests without any mutant" >&2
  if ! run_tests "$union" "$logs/baseline.log"; then
    tail -n 40 "$logs/baseline.log" >&2
    echo "mutate: tests fail without any mutant ($(failed_names "$logs/baseline.log")); fix that first" >&2
    keep=1
    exit 2
  fi
fi

killed=0 bad=0 kept=0
while IFS=$'\t' read -r id mset file tests cnt; do
  log=$logs/$id.log
  t0=$(date +%s)
  if [ "$cnt" != 1 ]; then
    [ "$cnt" = -1 ] && res="stale text  $id: $file does not exist" ||
      res="stale text  $id: found $cnt times in $file (must be exactly once)"
    bad=$((bad + 1))
    echo "$res"
    continue
  fi
  if [ "$(ctest_count -R "$tests")" -eq 0 ]; then
    echo "no tests    $id: '$tests' matches no test"
    bad=$((bad + 1))
    continue
  fi
  cp -p "$tree/$file" "$scratch/orig"
  python3 "$tool" apply "$list" "$tree" "$id"
  if ! cmake --build "$build" -j"$jobs" >"$log" 2>&1; then
    res="build error $id ($file): see the log with --keep"
    bad=$((bad + 1))
  elif run_tests "$tests" "$log.tests"; then
    if [ "$mset" = kept ]; then
      res="kept        $id: survives, as the list says: $(python3 "$tool" why "$list" "$id")"
      kept=$((kept + 1))
    else
      res="SURVIVED    $id ($file): $tests passed"
      bad=$((bad + 1))
    fi
  else
    res="killed      $id by $(failed_names "$log.tests")"
    killed=$((killed + 1))
  fi
  # Restore the text with a new mtime, so the next build recompiles it.
  cp "$scratch/orig" "$tree/$file"
  touch "$tree/$file"
  echo "$res ($(( $(date +%s) - t0 ))s)"
done <<<"$sel"

if [ "$kept" -gt 0 ]; then
  echo "killed $killed of $n_sel ($kept kept survivors)"
else
  echo "killed $killed of $n_sel"
fi
[ "$bad" -eq 0 ]
