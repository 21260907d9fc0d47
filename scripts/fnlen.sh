#!/bin/sh
# The functions of src/ longer than the budget (default 100 lines, or $1),
# longest first: "lines  file:line  name".  A function runs from the line
# that names it to its "}" at column 0 (the tree's style puts both braces
# of a function at column 0).  A report, not a gate: issue 24's budget is
# "no function over ~100 lines".
#   bash scripts/fnlen.sh        bash scripts/fnlen.sh 80
lim=${1:-100}
cd "$(dirname "$0")/.." || exit 2
find src -name '*.c' | sort | xargs awk -v lim="$lim" '
FNR == 1 { sig = ""; start = 0 }
/^[A-Za-z_].*\(/ && !/;[ \t]*$/ { sig = $0; sigline = FNR }
/^\{/ { start = 1; name = sig; sub(/\(.*/, "", name); n = split(name, w, /[ *]+/); name = w[n] }
/^\}/ && start {
	len = FNR - sigline + 1
	if (len > lim) printf "%5d  %s:%d  %s\n", len, FILENAME, sigline, name
	start = 0
}' | sort -rn
