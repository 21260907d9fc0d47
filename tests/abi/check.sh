#!/usr/bin/env bash
# The library's ABI as a test (docs/library.md, "ABI"):
#  1 the SONAME is libdbcron.so.MAJOR of the SOVERSION policy;
#  2 the exported symbols are exactly tests/abi/libdbcron.symbols, each
#    under the version node DBCRON_0 (changing the list is a deliberate
#    act: update the file in the commit that changes the API);
#  3 every public header compiles alone, as C11 and as C++11, from
#    include/ only, pedantic and warning-free;
#  4 a C and a C++ program that take the address of every listed symbol
#    through <dbcron/dbcron.h> link against the .so and run: every exported
#    name is declared in a public header with C linkage;
#  5 include/dbcron/version.h says the version CMake builds.
# usage: check.sh LIBDBCRON_SO SRC_DIR VERSION CC [CXX]
set -euo pipefail
lib=$1 src=$2 version=$3 cc=$4 cxx=${5:-}
list=$src/tests/abi/libdbcron.symbols
t=$(mktemp -d /tmp/dbcron-abi.XXXXXX)
trap 'rm -rf "$t"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "ok - $*"; }

soname=$(objdump -p "$lib" | awk '$1 == "SONAME" {print $2}')
[ "$soname" = "libdbcron.so.${version%%.*}" ] || fail "SONAME is '$soname', expected libdbcron.so.${version%%.*}"
pass "SONAME $soname"

nm -D --defined-only "$lib" | awk '$2 != "A" {print $NF}' > "$t/raw"
sed 's/@.*//' "$t/raw" | sort -u > "$t/exported"
if ! diff -u "$list" "$t/exported" > "$t/diff"; then
  cat "$t/diff" >&2
  fail "exported symbols differ from tests/abi/libdbcron.symbols (+ exported, not listed; - listed, not exported)"
fi
pass "$(wc -l < "$list") exported symbols, as listed"
unversioned=$(grep -v '@@DBCRON_0$' "$t/raw" || true)
[ -z "$unversioned" ] || fail "exported without the DBCRON_0 version node: $unversioned"
pass "every symbol under DBCRON_0"
grep -q '^dbcron__' "$list" && fail "an internal dbcron__ name is listed"
grep -vq '^dbcron_' "$list" && fail "a name without the dbcron_ prefix is listed"

flags=(-I"$src/include" -Wall -Wextra -Werror -pedantic -fsyntax-only)
for h in "$src"/include/dbcron/*.h; do
  name=dbcron/$(basename "$h")
  printf '#include <%s>\n' "$name" | "$cc" -std=c11 "${flags[@]}" -x c - || fail "$name alone as C11"
  if [ -n "$cxx" ]; then
    printf '#include <%s>\n' "$name" | "$cxx" -std=c++11 "${flags[@]}" -x c++ - || fail "$name alone as C++11"
  fi
done
pass "every public header compiles alone as C11${cxx:+ and C++11}"

{
  echo '#include <dbcron/dbcron.h>'
  echo 'typedef void (*any_fn)(void);'
  echo 'static any_fn const every[] = {'
  sed 's/.*/\t(any_fn)\&&,/' "$list"
  echo '};'
  echo 'int main(void) { return every[0] == 0; }'
} > "$t/every.c"
libdir=$(dirname "$lib")
link=(-L"$libdir" -Wl,-rpath,"$libdir" -Wl,--allow-shlib-undefined -l:"$(basename "$lib")")
# a sanitizer build's library needs its runtime in the program too
# shellcheck disable=SC2206
[ -n "${DBCRON_SANFLAGS:-}" ] && link+=($DBCRON_SANFLAGS)
"$cc" -std=c11 -I"$src/include" -Wall -Werror -o "$t/every_c" "$t/every.c" "${link[@]}" ||
  fail "a C program naming every listed symbol does not build against $lib"
"$t/every_c" || fail "the C program did not run"
pass "every listed symbol declared in <dbcron/dbcron.h> and linked from C"
if [ -n "$cxx" ]; then
  cp "$t/every.c" "$t/every.cpp"
  "$cxx" -std=c++11 -I"$src/include" -Wall -Werror -o "$t/every_cxx" "$t/every.cpp" "${link[@]}" ||
    fail "a C++ program naming every listed symbol does not build against $lib (extern \"C\" missing?)"
  "$t/every_cxx" || fail "the C++ program did not run"
  pass "and from C++ (C linkage)"
fi

hv=$(sed -n 's/^#define DBCRON_VERSION "\(.*\)"$/\1/p' "$src/include/dbcron/version.h")
[ "$hv" = "$version" ] || fail "include/dbcron/version.h says $hv, CMake builds $version"
pass "version.h says $version"
