#!/usr/bin/env bash
# Installs the system tools flowc's renderer and its tests use, from the package
# registries, and only what is missing (a second run takes well under a second):
#   - Graphviz's `dot` (flowc render -f svg/png/pdf/html)          apt: graphviz
#   - Chromium, for the browser tests of the HTML page and Mermaid  apt: chromium
#   - node/npm and the npm `mermaid` package, into .cache/mermaid   apt: nodejs npm; npm: mermaid
# flowc itself works without them (dot and mermaid output are text); the browser tests
# skip with a reason when a piece is missing on a machine where it cannot be installed.
set -u
cd "$(dirname "$0")/.."
MERMAID_VERSION="11.17.2"
MERMAID_DIR=".cache/mermaid"

# one tool at a time: a package that cannot be installed (say, npm beside a node
# that ships its own) must not stop the others
updated=""
apt_install() {
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    SUDO=""
  elif command -v sudo >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
    SUDO="sudo"
  else
    echo "note: could not install $*: install Graphviz to render SVG/PNG/PDF/HTML (e.g. 'apt-get install graphviz' or 'brew install graphviz'); the browser tests need chromium and npm" >&2
    return 1
  fi
  echo "installing $* with apt-get"
  if [ -z "$updated" ]; then
    $SUDO apt-get update -qq >/dev/null || true
    updated=1
  fi
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null \
    || echo "note: apt-get could not install $*" >&2
}

command -v dot >/dev/null 2>&1 || apt_install graphviz
command -v chromium >/dev/null 2>&1 || apt_install chromium
command -v npm >/dev/null 2>&1 || apt_install nodejs npm

if [ ! -f "$MERMAID_DIR/node_modules/mermaid/package.json" ] \
   || ! grep -q "\"version\": \"$MERMAID_VERSION\"" "$MERMAID_DIR/node_modules/mermaid/package.json"; then
  if command -v npm >/dev/null 2>&1; then
    echo "installing mermaid@$MERMAID_VERSION into $MERMAID_DIR with npm"
    mkdir -p "$MERMAID_DIR"
    npm install --prefix "$MERMAID_DIR" --no-audit --no-fund --silent --no-save \
      "mermaid@$MERMAID_VERSION" >/dev/null || echo "note: npm could not install mermaid" >&2
  else
    echo "note: npm is missing: the Mermaid browser test will skip" >&2
  fi
fi
exit 0
