#!/usr/bin/env bash
# For `make test` only: the browser tests of `flowc render -f html` and `-f mermaid`.
# Installs, each only if missing:
#   - apt: chromium            (driven by playwright; no browser is downloaded)
#   - apt: nodejs npm          (to fetch the npm package below)
#   - npm: mermaid, into .cache/mermaid (the page the Mermaid test loads)
set -u
cd "$(dirname "$0")/../.."
. scripts/lib/install.sh
MERMAID_VERSION="11.17.2"
MERMAID_DIR=".cache/mermaid"

command -v chromium >/dev/null 2>&1 || apt_install "Chromium, for the browser tests" chromium
command -v npm >/dev/null 2>&1 || apt_install "npm, to fetch mermaid for the browser tests" nodejs npm

if [ ! -f "$MERMAID_DIR/node_modules/mermaid/package.json" ] \
   || ! grep -q "\"version\": \"$MERMAID_VERSION\"" "$MERMAID_DIR/node_modules/mermaid/package.json"; then
  if command -v npm >/dev/null 2>&1; then
    echo "installing npm package mermaid@$MERMAID_VERSION into $MERMAID_DIR (for the browser tests)"
    mkdir -p "$MERMAID_DIR"
    npm install --prefix "$MERMAID_DIR" --no-audit --no-fund --silent --no-save \
      "mermaid@$MERMAID_VERSION" >/dev/null || echo "note: npm could not install mermaid" >&2
  else
    echo "note: npm is missing, so mermaid cannot be installed: the Mermaid browser test will skip" >&2
  fi
fi
exit 0
