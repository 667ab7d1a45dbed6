#!/usr/bin/env bash
# For `make test` only: the editor tests (the TextMate grammar, the VS Code extension).
# Installs, each only if missing:
#   - apt: nodejs npm          (Node 20 or later runs the tools below)
#   - npm: editors/vscode's dependencies, exactly as package-lock.json pins them
#          (`npm ci`, into editors/vscode/node_modules; only when that lock file changes):
#          vscode-tmgrammar-test, vscode-textmate, vscode-oniguruma, esbuild, typescript,
#          @vscode/vsce, vscode-languageclient
set -u
cd "$(dirname "$0")/../.."
. scripts/lib/install.sh
DIR="editors/vscode"
STAMP="$DIR/node_modules/.flowc-lock.sha256"

command -v npm >/dev/null 2>&1 || apt_install "Node.js and npm, for the editor tests" nodejs npm
if ! command -v npm >/dev/null 2>&1; then
  echo "note: npm is missing, so the editor tests cannot run" >&2
  exit 0
fi

want="$(sha256sum "$DIR/package-lock.json" | cut -d' ' -f1)"
if [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$want" ]; then
  echo "installing the npm packages of $DIR (npm ci, as package-lock.json pins them)"
  # --ignore-scripts: nothing here needs an install script (esbuild's binary comes as a
  # package of its own), and none runs on this machine.
  if (cd "$DIR" && npm ci --ignore-scripts --prefer-offline --no-audit --no-fund --loglevel=error >/dev/null); then
    echo "$want" > "$STAMP"
  else
    echo "note: npm ci failed in $DIR: the editor tests will fail" >&2
  fi
fi
exit 0
