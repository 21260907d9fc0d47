#!/usr/bin/env bash
# The few banned things (STYLE.md habit 14).  Exits non-zero and prints
# file:line for each use.
set -uo pipefail
root=${1:-.}
cd "$root"
status=0
files=$(git ls-files 'src/*.c' 'src/*.h' 'include/*.h' 2>/dev/null || find src include -name '*.[ch]')
[ -n "$files" ] || files=$(find src include -name '*.[ch]')
hits=$(grep -nE '\b(strcpy|sprintf|vsprintf|atoi|atol|localtime|gmtime|strtok|gets)\(' $files | grep -v '^\S*:\s*[0-9]*:\s*\*' || true)
if [ -n "$hits" ]; then
  echo "banned function used:"; echo "$hits"; status=1
fi
# Raw allocation outside the wrapper.
hits=$(grep -nE '(^|[^_a-z])(malloc|calloc|realloc|strdup|strndup)\s*\(' $files | grep -v '^src/core/alloc.c:' | grep -v 'sqlite3_\|g_\|PQ' || true)
if [ -n "$hits" ]; then
  echo "raw allocation outside src/core/alloc.c (use dbcron__malloc & co):"; echo "$hits"; status=1
fi
[ $status -eq 0 ] && echo "style: ok"
exit $status
