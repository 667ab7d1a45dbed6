#!/usr/bin/env bash
# For `make test` only: the test that drives `flowc lsp` from a real editor, Neovim run
# headless with its built-in LSP client. Installs apt: neovim, only if `nvim` is missing.
set -u
cd "$(dirname "$0")/../.."
. scripts/lib/install.sh

command -v nvim >/dev/null 2>&1 || apt_install "Neovim, for the editor test of flowc lsp" neovim
exit 0
