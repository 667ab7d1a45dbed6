#!/usr/bin/env bash
# `make demo`: flowc's main job on the shipped examples, one step at a time.
set -u
cd "$(dirname "$0")/.."
FLOWC="${FLOWC:-.venv/bin/flowc}"  # another environment's flowc: FLOWC=.venv-3.12/bin/flowc
FLOW="${1:-examples/feedback_loop.flow}"
OUT="${OUT:-out}"
mkdir -p "$OUT"
# each command in bold, on a terminal only (and not with NO_COLOR), as flowc itself does
if [ -t 1 ] && [ -z "${NO_COLOR:-}" ]; then bold=$'\033[1m'; plain=$'\033[0m'; else bold=; plain=; fi
step() { printf '\n%s$ %s%s\n' "$bold" "$*" "$plain"; "$@"; }
status=0

echo "== 1. check: a hand-written review loop has mistakes AG2 accepts silently"
step $FLOWC check demo/review.flow

echo; echo "== 2. the same loop written right: check is clean, then compile, format-check, test, draw"
step $FLOWC check "$FLOW" || status=1
step $FLOWC compile "$FLOW" -o "$OUT/$(basename "$FLOW" .flow).json" || status=1
echo "wrote $OUT/$(basename "$FLOW" .flow).json (the knobs dict AG2's workflow channel loads)"
step $FLOWC fmt --check examples/ || status=1
step $FLOWC test "$FLOW" || status=1
if command -v dot >/dev/null 2>&1; then
  step $FLOWC render "$FLOW" -f svg -o "$OUT/$(basename "$FLOW" .flow).svg" || status=1
  step $FLOWC render demo/review.flow --check -f html -o "$OUT/review.html" || status=1
  echo "wrote $OUT/$(basename "$FLOW" .flow).svg and $OUT/review.html (open them in a browser)"
else
  step $FLOWC render "$FLOW" -f mermaid -o "$OUT/$(basename "$FLOW" .flow).mmd" || status=1
  echo "Graphviz's dot is missing, so the diagram was written as Mermaid: $OUT/$(basename "$FLOW" .flow).mmd"
fi

echo; echo "== 3. properties: say what must hold on every run; check proves it or shows the shortest run that breaks it"
# examples/approval.flow has one property that holds and one that a run breaks, on purpose:
# check exits with 1 there (E116), which the demo expects
step $FLOWC check examples/approval.flow
step $FLOWC test examples/approval.flow || status=1

echo; echo "== 4. run it on the hub runtime with a scripted reviewer, durable in SQLite"
step $FLOWC run "$FLOW" --script examples/scripts/feedback_loop.yaml --db "$OUT/runs.sqlite" || status=1
step $FLOWC log --db "$OUT/runs.sqlite" || status=1

echo; echo "== 5. watch it in the browser: its diagram, transcript, timeline, and why each turn went where it went"
# the newest run of the database is the one step 4 wrote (`flowc log` lists them oldest first)
run=$($FLOWC log --db "$OUT/runs.sqlite" | tail -n 1 | cut -d ' ' -f 1)
echo "flowc view needs the view extra: .venv/bin/pip install -e '.[view]' (Starlette and uvicorn)"
echo "then this serves the run's page on 127.0.0.1 (Ctrl-C stops it):"
echo "  $FLOWC view $run --db $OUT/runs.sqlite"
exit $status
