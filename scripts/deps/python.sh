#!/usr/bin/env bash
# For `make test`: prints the path of a CPython X.Y interpreter (the one argument, e.g.
# 3.12), finding it, in this order:
#   1. `pythonX.Y` on PATH (a distribution's package, deadsnakes, a manual build);
#   2. pyenv's interpreters: $(pyenv root)/versions/X.Y.*/bin/python (the newest patch);
#   3. uv's interpreters: `uv python find X.Y`, and else `uv python install X.Y` (uv from
#      PyPI, installed into .cache/uv-tool; it downloads a standalone CPython build).
# Says on stderr what it installs before it does; exits 1, naming what to install, when
# none of these gives one.
set -u
cd "$(dirname "$0")/../.."
want="${1:?usage: scripts/deps/python.sh X.Y}"

is_version() {  # is "$1" a CPython $want?
  [ -x "$1" ] && [ "$("$1" -c 'import platform, sys; print(platform.python_implementation(), "%d.%d" % sys.version_info[:2])' 2>/dev/null)" = "CPython $want" ]
}

if command -v "python$want" >/dev/null 2>&1 && is_version "$(command -v "python$want")"; then
  command -v "python$want"
  exit 0
fi

root="${PYENV_ROOT:-$HOME/.pyenv}"
if command -v pyenv >/dev/null 2>&1; then
  root="$(pyenv root)"
fi
if [ -d "$root/versions" ]; then
  for dir in $(ls -d "$root/versions/$want".* 2>/dev/null | sort -V -r); do
    if is_version "$dir/bin/python"; then
      echo "$dir/bin/python"
      exit 0
    fi
  done
fi

uv=".cache/uv-tool/bin/uv"
if [ ! -x "$uv" ] && ! command -v uv >/dev/null 2>&1; then
  echo "installing uv (PyPI) into .cache/uv-tool, to install CPython $want" >&2
  python3 -m venv .cache/uv-tool >&2 && .cache/uv-tool/bin/pip install --quiet uv >&2 \
    || { echo "note: could not install uv" >&2; }
fi
[ -x "$uv" ] || uv="$(command -v uv || true)"
if [ -n "$uv" ]; then
  found="$("$uv" python find --no-project "$want" 2>/dev/null || true)"
  if [ -z "$found" ] || ! is_version "$found"; then
    echo "installing CPython $want with uv (uv python install $want)" >&2
    "$uv" python install "$want" >&2 || true
    found="$("$uv" python find --no-project "$want" 2>/dev/null || true)"
  fi
  if [ -n "$found" ] && is_version "$found"; then
    echo "$found"
    exit 0
  fi
fi
echo "error: no CPython $want found (PATH, pyenv, uv) and none could be installed: install it (e.g. 'pyenv install $want' or 'uv python install $want') and run again" >&2
exit 1
