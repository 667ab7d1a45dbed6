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
# is found, or installed, by scripts/deps/python.sh. Makes every job's environment, runs
# the jobs AT_ONCE at a time (default: one per CPU), prints a table of their times, and
# exits 1 if any failed.
set -u
cd "$(dirname "$0")/../.."
if [ "${BASH_VERSINFO[0]}" -lt 5 ] || { [ "${BASH_VERSINFO[0]}" -eq 5 ] && [ "${BASH_VERSINFO[1]}" -lt 1 ]; }; then
  echo "scripts/ci/matrix.sh needs bash 5.1 or later (it has $BASH_VERSION)" >&2
  exit 2
fi
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

# run job $1 in environment $2, writing its output to $3 and its summary line to $3.sum
run_job() {
  local job="$1" venv="$2" log="$3" made="$4" status="passed" begun
  {
    echo "-- $job: the demo ($venv/bin/flowc)"
    FLOWC="$venv/bin/flowc" OUT="$(mktemp -d)" bash scripts/demo.sh >/dev/null 2>&1 \
      || { status="FAILED (demo)"; FLOWC="$venv/bin/flowc" OUT="$(mktemp -d)" bash scripts/demo.sh 2>&1 | tail -20; }
    echo "-- $job: pytest ($("$venv/bin/python" -c 'import platform; print(platform.python_version())'))"
    begun=$SECONDS
    "$venv/bin/python" -m pytest -p no:cacheprovider || status="FAILED"
    echo "$job: $status; set-up ${made} s, pytest $((SECONDS - begun)) s" > "$log.sum"
  } > "$log" 2>&1
  [ "$status" = "passed" ]
}

# Every environment is made first, one at a time (installers of interpreters and pip
# caches are not made to run side by side); then the jobs run, AT_ONCE of them side by
# side (default: the number of CPUs, at most the number of jobs). Each job's output goes
# to its own log, printed whole when the job ends, so the logs never interleave; on INT or
# TERM (Ctrl-C, a CI time-out) the end of each running job's log is printed.
failed=0
summary=()
ready=()
venvs=()
for job in "${jobs[@]}"; do
  echo "== $job: environment"
  start=$SECONDS
  if ! venv="$(prepare "$job")" || [ -z "$venv" ]; then
    summary+=("$job: could not be set up")
    failed=1
    continue
  fi
  ready+=("$job")
  venvs+=("$venv:$((SECONDS - start))")
done

AT_ONCE="${AT_ONCE:-$(nproc 2>/dev/null || echo 1)}"
[ "$AT_ONCE" -ge 1 ] 2>/dev/null || AT_ONCE=1
[ "$AT_ONCE" -le "${#ready[@]}" ] || AT_ONCE="${#ready[@]}"
[ "$AT_ONCE" -ge 1 ] || AT_ONCE=1
logs="$(mktemp -d)"
declare -A pids=()
show() {  # print the log of the job that ran as pid $1
  local job="${pids[$1]}" result="FAILED (no summary)"
  [ -f "$logs/$job.log.sum" ] && result="$(cut -d';' -f1 "$logs/$job.log.sum")"
  echo "== $job ended at $((SECONDS - began)) s: ${result#"$job: "}"
  cat "$logs/$job.log"
  unset "pids[$1]"
}
reap() {  # wait until a running job ends, and print its log
  local done_pid="" pid
  wait -n -p done_pid "${!pids[@]}" || true
  if [ -n "$done_pid" ] && [ -n "${pids[$done_pid]:-}" ]; then
    show "$done_pid"
    return
  fi
  # wait did not say which job ended: show every job that is no longer running
  for pid in "${!pids[@]}"; do
    kill -0 "$pid" 2>/dev/null || show "$pid"
  done
  sleep 1
}
kill_tree() {  # TERM process $1 and everything it started
  local child
  for child in $(pgrep -P "$1" 2>/dev/null); do kill_tree "$child"; done
  kill -TERM "$1" 2>/dev/null || true
}
stopped() {  # INT or TERM (Ctrl-C, a CI time-out): what each running job had printed
  trap - INT TERM
  local pid
  for pid in "${!pids[@]}"; do
    kill_tree "$pid"
    echo "== ${pids[$pid]}: stopped at $((SECONDS - began)) s; the end of its output:"
    tail -n 60 "$logs/${pids[$pid]}.log"
  done
  rm -rf "$logs"
  exit 130
}
trap stopped INT TERM
began=$SECONDS
for i in "${!ready[@]}"; do
  job="${ready[$i]}"; venv="${venvs[$i]%:*}"; made="${venvs[$i]##*:}"
  while [ "${#pids[@]}" -ge "$AT_ONCE" ]; do
    reap
  done
  echo "== $job: started with $venv (${#pids[@]} other jobs running)"
  run_job "$job" "$venv" "$logs/$job.log" "$made" &
  pids[$!]="$job"
done
while [ "${#pids[@]}" -gt 0 ]; do
  reap
done
trap - INT TERM
for job in "${ready[@]}"; do
  if [ -f "$logs/$job.log.sum" ]; then
    line="$(cat "$logs/$job.log.sum")"
  else
    line="$job: FAILED (ended before its summary)"
  fi
  summary+=("$line")
  case "$line" in *": passed;"*) ;; *) failed=1 ;; esac
done
rm -rf "$logs"
echo
echo "== test jobs ($((SECONDS - began)) s, $AT_ONCE at once)"
printf '%s\n' "${summary[@]}"
exit $failed
