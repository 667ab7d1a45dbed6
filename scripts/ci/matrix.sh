#!/usr/bin/env bash
# `make test`'s test jobs: the whole suite (pytest) and the demo, on every Python the
# package supports and on the extreme versions of its dependencies:
#
#   pyX.Y          for each version in PYTHONS but the newest: the usual install
#                  (.venv for the version of $PYTHON, else .venv-X.Y), reinstalled
#                  when pyproject.toml changes
#   pyX.Y-newest   the newest version in PYTHONS, with the newest release of every
#                  dependency the bounds allow (.venv-X.Y-newest, upgraded on every run)
#   pyX.Y-lowest   the oldest version in PYTHONS, with every runtime dependency at the
#                  lowest release its bounds allow (.venv-X.Y-lowest;
#                  scripts/ci/lowest_constraints.py)
#
# Usage: scripts/ci/matrix.sh [PYTHON]   with PYTHONS="3.11 3.12 3.13" and
# DEPS_JOBS="newest lowest" in the environment (the Makefile's defaults); each interpreter
# is found, or installed, by scripts/deps/python.sh. Runs every job, prints a table of
# their times, and exits 1 if any failed.
set -u
cd "$(dirname "$0")/../.."
PYTHON="${1:-python3}"
PYTHONS="${PYTHONS:-3.11 3.12 3.13}"
DEPS_JOBS="${DEPS_JOBS-newest lowest}"
default="$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
sorted="$(printf '%s\n' $PYTHONS | sort -V)"
oldest="$(echo "$sorted" | head -1)"
newest="$(echo "$sorted" | tail -1)"
quiet="--quiet --disable-pip-version-check"

jobs=()
for v in $sorted; do
  if [ "$v" = "$newest" ] && [[ " $DEPS_JOBS " == *" newest "* ]]; then
    jobs+=("py$v-newest")
  else
    jobs+=("py$v")
  fi
done
[[ " $DEPS_JOBS " == *" lowest "* ]] && jobs+=("py$oldest-lowest")

# make the environment of job $1 (prints its folder; "" when it cannot be made)
prepare() {
  local job="$1" v flavour venv py
  v="${job#py}"; v="${v%%-*}"
  flavour="${job#py$v}"; flavour="${flavour#-}"
  if [ -z "$flavour" ] && [ "$v" = "$default" ]; then
    echo ".venv"; return 0  # made by `make setup`
  fi
  venv=".venv-$v${flavour:+-$flavour}"
  py="$(bash scripts/deps/python.sh "$v")" || return 1
  if [ ! -x "$venv/bin/python" ]; then
    echo "making $venv with $py" >&2
    "$py" -m venv "$venv" >&2 || return 1
    "$venv/bin/pip" install $quiet --upgrade pip >&2 || return 1
  fi
  case "$flavour" in
    newest)
      echo "installing flowc[dev] into $venv with the newest releases the bounds allow (pip install --upgrade --upgrade-strategy eager)" >&2
      "$venv/bin/pip" install $quiet --upgrade --upgrade-strategy eager -e '.[dev]' >&2 || return 1 ;;
    lowest)
      if [ ! -f "$venv/.installed" ] || [ pyproject.toml -nt "$venv/.installed" ]; then
        "$venv/bin/pip" install $quiet packaging >&2 || return 1
        "$venv/bin/python" scripts/ci/lowest_constraints.py > "$venv/constraints.txt" || return 1
        echo "installing flowc[dev] into $venv with its runtime dependencies at their lowest releases: $(tr '\n' ' ' < "$venv/constraints.txt")" >&2
        "$venv/bin/pip" install $quiet -c "$venv/constraints.txt" -e '.[dev]' >&2 || return 1
        touch "$venv/.installed"
      fi ;;
    *)
      if [ ! -f "$venv/.installed" ] || [ pyproject.toml -nt "$venv/.installed" ]; then
        echo "installing flowc[dev] into $venv (pip)" >&2
        "$venv/bin/pip" install $quiet -e '.[dev]' >&2 || return 1
        touch "$venv/.installed"
      fi ;;
  esac
  echo "$venv"
}

failed=0
summary=()
for job in "${jobs[@]}"; do
  echo "== $job"
  start=$SECONDS
  if ! venv="$(prepare "$job")" || [ -z "$venv" ]; then
    summary+=("$job: could not be set up")
    failed=1
    continue
  fi
  made=$((SECONDS - start))
  status="passed"
  echo "-- $job: the demo ($venv/bin/flowc)"
  FLOWC="$venv/bin/flowc" OUT="$(mktemp -d)" bash scripts/demo.sh >/dev/null 2>&1 \
    || { status="FAILED (demo)"; failed=1; FLOWC="$venv/bin/flowc" OUT="$(mktemp -d)" bash scripts/demo.sh 2>&1 | tail -20; }
  echo "-- $job: pytest ($($venv/bin/python -c 'import platform; print(platform.python_version())'))"
  begun=$SECONDS
  "$venv/bin/python" -m pytest -p no:cacheprovider || { status="FAILED"; failed=1; }
  summary+=("$job: $status; set-up ${made} s, pytest $((SECONDS - begun)) s")
done
echo
echo "== test jobs"
printf '%s\n' "${summary[@]}"
exit $failed
