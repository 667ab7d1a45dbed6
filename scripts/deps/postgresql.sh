#!/usr/bin/env bash
# For `make test` only: the PostgreSQL store's tests (`--db postgresql://...`, workers).
# Installs apt: postgresql, only if its server programs (initdb, pg_ctl under
# /usr/lib/postgresql/VERSION/bin) are missing. The tests start a throw-away cluster of
# their own under a temporary folder and stop it after; Debian's own cluster is not used.
set -u
cd "$(dirname "$0")/../.."
. scripts/lib/install.sh

found=""
for bin in /usr/lib/postgresql/*/bin; do
  if [ -x "$bin/initdb" ] && [ -x "$bin/pg_ctl" ]; then found="$bin"; fi
done
[ -n "$found" ] || apt_install "PostgreSQL's server (initdb, pg_ctl), for the PostgreSQL store's tests" postgresql
exit 0
