#!/usr/bin/env bash
# For `make demo` and `make test`: Graphviz's `dot`, which `flowc render -f svg/png/pdf/html`
# calls. Installs apt: graphviz, only if `dot` is missing. flowc works without it (the dot
# and Mermaid outputs are text) and says how to install it when a command needs it.
set -u
cd "$(dirname "$0")/../.."
. scripts/lib/install.sh

command -v dot >/dev/null 2>&1 || apt_install "Graphviz's dot, for flowc render -f svg/png/pdf/html" graphviz
exit 0
