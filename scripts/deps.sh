#!/usr/bin/env bash
# Install the Debian packages dbcron builds, tests and runs with, when they
# are missing.  Idempotent; apt is only touched when something is missing.
set -euo pipefail

pkgs=(build-essential cmake pkg-config git python3
      libsqlite3-dev sqlite3 libpq-dev postgresql postgresql-contrib
      libmariadb-dev mariadb-server mariadb-client
      galera-4 rsync
      libglib2.0-dev libjansson-dev libcmocka-dev libsystemd-dev libmicrohttpd-dev
      libcurl4-openssl-dev openssl
      curl jq apache2-utils chromium
      clang libclang-rt-14-dev procps util-linux faketime zsh
      postgresql-15-auto-failover iproute2)
if [ "${1:-}" = "--with-quartz" ]; then
  pkgs+=(default-jdk-headless libquartz2-java)
fi

# `make deb` only (scripts/deb.sh): the Debian packaging tools
if [ "${1:-}" = "--with-deb" ]; then
  pkgs+=(debhelper dpkg-dev lintian)
fi

# `make test`: Node.js for the tools the tests run that Debian does not
# package (tools/npm: the OpenAPI linter), installed there with npm ci
lint=0
if [ "${1:-}" = "--with-lint" ]; then
  pkgs+=(nodejs)
  lint=1
fi
npm_tools() {
  [ "$lint" = 1 ] || return 0
  local dir
  dir=$(cd "$(dirname "$0")/.." && pwd)/tools/npm
  [ -x "$dir/node_modules/.bin/redocly" ] && return 0
  if ! command -v npm >/dev/null; then
    # Debian's own nodejs comes without npm
    [ "$(id -u)" -eq 0 ] || { echo "deps: npm is missing; run as root or: apt-get install npm" >&2; exit 1; }
    apt-get install -y -qq --no-install-recommends npm >/dev/null
  fi
  echo "deps: installing the test tools of $dir (npm ci)" >&2
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
}

missing=()
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  npm_tools
  exit 0
fi

echo "deps: installing ${missing[*]}" >&2
if [ "$(id -u)" -ne 0 ]; then
  echo "deps: missing packages and not root; run as root or: apt-get install ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
npm_tools
