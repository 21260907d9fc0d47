#!/usr/bin/env bash
# The docs agree with the binary (docs/testing.md "Docs against the binary"):
#
# 1. Every example command in a fenced ```sh, ```bash, ```shell or ```console
#    block of README.md and docs/*.md (a line whose first word, after an
#    optional "$ ", is dbcron; "\" continues a line) runs against a fresh
#    SQLite database of its block (DBCRON_DB, after `dbcron init`), in a
#    scratch directory, for at most 10 s.  It fails on exit status 2, on
#    "unknown option" or "unknown command", and on a timeout.  A block that
#    cannot run here (it needs a running node, a server, a file the block
#    makes with another program, the host's crontab) carries the marker
#        <!-- docs-examples: skip REASON -->
#    on the line before its opening fence; the test prints each skipped block
#    with its reason, so nothing is left out silently.
# 2. For every subcommand, the options its --help lists (on the usage lines
#    and the option lines, "  --opt ..."; or another's, see help_options) are
#    exactly the options its parser accepts, tried one by one (--opt=x --help, or --opt --help for a flag
#    without a value); the candidates are every option of every --help and of
#    every option table in src/cli/.  Under a sanitizer, only the listed
#    options are tried (see below).
# 3. docs/cli.md names every subcommand in a synopsis line ("    dbcron SUB"),
#    and every option of that synopsis is one the parser accepts.
set -euo pipefail
source "$DBCRON_TESTLIB"
: "${DBCRON_SRC:?DBCRON_SRC must point at the source tree}"
unset DBCRON_DB DBCRON_DB_FILE DBCRON_CONFIG

mkdir -p "$T_DIR/bin"
ln -s "$DBCRON_BIN" "$T_DIR/bin/dbcron"
export PATH="$T_DIR/bin:$PATH"

# ---------------------------------------------------------------------
t_section "example commands in the docs"
python3 - "$DBCRON_SRC" >"$T_DIR/examples.tsv" <<'EOF'
import glob, os, re, sys
src = sys.argv[1]
files = [os.path.join(src, "README.md")] + sorted(glob.glob(os.path.join(src, "docs", "*.md")))
fence = re.compile(r"^\s*```\s*([A-Za-z]*)")
marker = re.compile(r"<!--\s*docs-examples:\s*skip\s+(.*?)\s*-->")
for path in files:
    rel = os.path.relpath(path, src)
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    block = 0
    while i < len(lines):
        m = fence.match(lines[i])
        if not m:
            i += 1
            continue
        tag, start = m.group(1), i + 1
        j = i + 1
        while j < len(lines) and not fence.match(lines[j]):
            j += 1
        body = lines[i + 1:j]
        i = j + 1
        if tag not in ("sh", "bash", "shell", "console"):
            continue
        block += 1
        skip = marker.search(lines[start - 2]) if start >= 2 else None
        # joined lines with the number of their first line
        cmds, k = [], 0
        while k < len(body):
            n, text = start + 1 + k, body[k]
            while text.endswith("\\") and k + 1 < len(body):
                k += 1
                text = text[:-1] + " " + body[k].strip()
            k += 1
            t = text.strip()
            if t.startswith("$ "):
                t = t[2:]
            if re.match(r"dbcron(\s|$)", t):
                cmds.append((n, t))
        if not cmds:
            continue
        if skip:
            print("SKIP\t%s:%d\t%s\t%d" % (rel, start, skip.group(1), len(cmds)))
            continue
        for n, t in cmds:
            print("RUN\t%s:%d\t%s#%d\t%s" % (rel, n, rel, block, t))
EOF
nrun=0
nskip=0
cur=""
while IFS=$'\t' read -r kind where a b; do
	if [ "$kind" = SKIP ]; then
		echo "# skipped: $where ($b commands): $a"
		nskip=$((nskip + 1))
		continue
	fi
	blk=$a
	cmd=$b
	if [ "$blk" != "$cur" ]; then
		cur=$blk
		work=$(mktemp -d "$T_DIR/ex.XXXXXX")
		export DBCRON_DB=sqlite:$work/docs.db
		"$DBCRON_BIN" init >/dev/null
	fi
	rc=0
	(cd "$work" && timeout 10 bash -c "$cmd" </dev/null >"$work/.out" 2>"$work/.err") || rc=$?
	nrun=$((nrun + 1))
	err=$(head -c 2000 "$work/.err")
	if [ "$rc" = 2 ] || [ "$rc" = 124 ] ||
		grep -Eq "unknown (or incomplete )?(option|command)" "$work/.err"; then
		_t_fail "$where: $cmd" "exit status $rc" "stderr: $err" \
			"(fix the example, or mark its block <!-- docs-examples: skip REASON -->)"
	else
		_t_pass
	fi
done <"$T_DIR/examples.tsv"
unset DBCRON_DB
echo "# $nrun example commands run, $nskip blocks skipped by their marker"
assert_ne 0 "$nrun" "some examples were found and run"

# ---------------------------------------------------------------------
# The subcommands, from the binary's own help.
subcommands() {
	local c
	for c in $("$DBCRON_BIN" --help | sed -n 's/^  \([a-z][a-z-]*\) .*/\1/p'); do
		case $c in
		job | cron | config)
			# "job add|list|..." in the command's line of dbcron --help
			local subs
			subs=$("$DBCRON_BIN" --help | sed -n "s/^  $c *$c \([a-z|-]*\).*/\1/p" | tr '|' ' ')
			local s
			for s in $subs; do echo "$c $s"; done
			;;
		*) echo "$c" ;;
		esac
	done
}
mapfile -t SUBS < <(subcommands)

# The options the help text of "$@" lists: usage lines and option lines.
# A help that hands its flags over to another's ("FLAGS are those of `job
# add` (dbcron job add --help) ..., plus --no-retry-jitter and --no-inherit-env;
# not --paused") lists that one's options, plus the ones after "plus", less
# the ones after "not".
own_options() {
	awk '
		/^usage:/ { u = 1 }
		/^$/ { u = 0 }
		u || /^ {2,4}--[a-z]/ { print }
	' | grep -oE -- '--[a-z][a-z0-9-]*' || true
}
help_options() {
	local text ref
	text=$("$DBCRON_BIN" "$@" --help 2>/dev/null || true)
	ref=$(grep -oE '\(dbcron [a-z]+ [a-z-]+ --help\)' <<<"$text" | head -1 | sed -E 's/^\(dbcron (.*) --help\)$/\1/')
	{
		own_options <<<"$text"
		if [ -n "$ref" ]; then
			# shellcheck disable=SC2086
			"$DBCRON_BIN" $ref --help 2>/dev/null | own_options
			tr '\n' ' ' <<<"$text" | grep -oE 'plus --[a-z-]+( and --[a-z-]+)*' | grep -oE -- '--[a-z-]+' || true
		fi
	} | sort -u | grep -vx -- '--help' |
		grep -vxF -f <(tr '\n' ' ' <<<"$text" | grep -oE 'not --[a-z-]+' | sed 's/^not //'; echo --help) || true
}

# 0 when the parser of "$@" takes option $opt (which is the last argument):
# given "=x", an unknown option is "unknown", a known one is taken or, a
# flag, refused as taking no value (src/cli/opts.c), and then tried bare,
# since a command may refuse a flag of a shared table itself (node's own
# parser says "unknown or incomplete": tried bare too).  About 1,800
# calls: one process each (no subshell, timeout or grep around it; ctest's
# timeout guards a hang), run from $T_DIR.
accepts() {
	local opt=${*: -1}
	local args=("${@:1:$#-1}")
	local e=""
	"$DBCRON_BIN" "${args[@]}" "$opt=x" --help 2>"$T_DIR/.acc" >/dev/null </dev/null || true
	IFS= read -r -d '' e <"$T_DIR/.acc" || true
	if [[ $e == *"takes no value"* || $e == *"unknown or incomplete option"* ]]; then
		# a flag of the table: the command itself may still refuse it
		"$DBCRON_BIN" "${args[@]}" "$opt" --help 2>"$T_DIR/.acc" >/dev/null </dev/null || true
		e=""
		IFS= read -r -d '' e <"$T_DIR/.acc" || true
	fi
	! [[ $e =~ unknown\ (or\ incomplete\ )?option ]]
}

t_section "every subcommand's --help lists exactly the options its parser accepts"
cd "$T_DIR"
export DBCRON_DB=sqlite:$T_DIR/help.db
"$DBCRON_BIN" init >/dev/null
candidates=$(
	{
		for s in "${SUBS[@]}"; do
			# shellcheck disable=SC2086
			help_options $s
		done
		grep -hoE '\{"[a-z][a-z0-9-]*", *(no|required|optional)_argument' "$DBCRON_SRC"/src/cli/*.c |
			sed -E 's/^\{"([^"]*)".*/--\1/'
	} | sort -u | grep -vx -- '--help'
)
assert_ne "" "$candidates" "options were found"
# Under a sanitizer only the listed options are tried (about 300 calls, not
# 1,800): the parser's paths run under the sanitizer all the same, and the
# other half ("takes options its --help does not list") is a property of the
# text, which the plain build's run checks.
sanitized=0
[ -z "${DBCRON_SANFLAGS:-}" ] || sanitized=1
for s in "${SUBS[@]}"; do
	# shellcheck disable=SC2086
	listed=$(help_options $s)
	accepted=""
	try=$candidates
	[ "$sanitized" -eq 0 ] || try=$listed
	for opt in $try; do
		# shellcheck disable=SC2086
		if accepts $s "$opt"; then
			accepted+="$opt"$'\n'
		fi
	done
	# an option the help names as refused ("not --paused") may reach the
	# parser only to be refused there with a message of its own
	# shellcheck disable=SC2086
	refused=$("$DBCRON_BIN" $s --help 2>/dev/null | tr '\n' ' ' | grep -oE 'not --[a-z-]+' | sed 's/^not //' || true)
	accepted=$(printf '%s' "$accepted" | sort -u | grep -vxF -f <(printf '%s\n' $refused --help) || true)
	only_listed=$(comm -23 <(printf '%s\n' "$listed") <(printf '%s\n' "$accepted") | grep . || true)
	only_taken=$(comm -13 <(printf '%s\n' "$listed") <(printf '%s\n' "$accepted") | grep . || true)
	assert_eq "" "$only_listed" "dbcron $s --help lists options its parser refuses"
	[ "$sanitized" -eq 1 ] || assert_eq "" "$only_taken" "dbcron $s takes options its --help does not list"
done

# ---------------------------------------------------------------------
t_section "docs/cli.md has a synopsis of every subcommand, with options the parser takes"
for s in "${SUBS[@]}"; do
	# the synopsis: an indented "dbcron SUB" line and the deeper-indented
	# lines that continue it
	syn=$(awk -v sub_="dbcron $s" '
		function indent(l) { match(l, /^ */); return RLENGTH }
		inside && indent($0) > base && $0 !~ /^ *$/ { print; next }
		{ inside = 0 }
		{
			line = $0; sub(/^ +/, "", line); sub(/^\$ /, "", line)
			if (indent($0) >= 4 && (line == sub_ || index(line, sub_ " ") == 1 || index(line, sub_ "|") == 1)) {
				print; inside = 1; base = indent($0)
			}
		}
	' "$DBCRON_SRC/docs/cli.md")
	# "job list | show | ..." in a heading names them too
	if [ -z "$syn" ]; then
		_t_fail "docs/cli.md has no synopsis line for 'dbcron $s'"
		continue
	fi
	_t_pass
	for opt in $(grep -oE -- '--[a-z][a-z0-9-]*' <<<"$syn" | sort -u | grep -vx -- '--help' || true); do
		# shellcheck disable=SC2086
		if accepts $s "$opt"; then
			_t_pass
		else
			_t_fail "docs/cli.md's synopsis of 'dbcron $s' has $opt, which the parser refuses"
		fi
	done
done

t_done
