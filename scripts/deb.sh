#!/usr/bin/env bash
# `make deb`: the Debian packages (debian/) built from a copy of the source
# tree (tracked files and new ones not ignored, as they are now) in
# OUT (default build/deb), so that dpkg-buildpackage writes nothing into
# the checkout and its ../ .  Prints the .deb files it made.  Needs
# debhelper and dpkg-dev (`make deb` installs them: deps.sh --with-deb).
#   bash scripts/deb.sh [OUT]
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mkdir -p "${1:-build/deb}" && cd "${1:-build/deb}" && pwd)
version=$(sed -n '1s/^dbcron (\([^)]*\)).*/\1/p' debian/changelog)
src=$out/dbcron-$version
rm -rf "$src" "$out"/*.deb "$out"/*.buildinfo "$out"/*.changes
mkdir -p "$src"
git ls-files -z --cached --others --exclude-standard |
	tar --null -T - --ignore-failed-read -cf - 2>/dev/null | tar -xf - -C "$src"
(cd "$src" && DEB_BUILD_OPTIONS="parallel=${JOBS:-2} ${DEB_BUILD_OPTIONS:-}" \
	dpkg-buildpackage -us -uc -b) >"$out/build.log" 2>&1 ||
	{ tail -30 "$out/build.log" >&2; echo "deb: failed; the log is $out/build.log" >&2; exit 1; }
ls "$out"/*.deb
