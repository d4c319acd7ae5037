#!/usr/bin/env bash
# Smoke test of the explorer as a user drives it, in tmux at 120×40: start two
# runs from the keyboard (SMC and EP when this build has them, else the
# baselines), wait for both, check that every pane shows, open and close the
# help, export a record, quit; then `pacauc replay` the export and check it shows
# the same result. Prints the screens it checks.
set -euo pipefail
cd "$(dirname "$0")/.."

command -v tmux >/dev/null || (apt-get update -qq && apt-get install -y -qq tmux >/dev/null)
cargo build --release --quiet
BIN="$PWD/target/release/pacauc"
WORK=$(mktemp -d)
S="pacauc-smoke-$$"
cleanup() { tmux -L "$S" kill-server 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT

screen() { tmux -L "$S" capture-pane -p -t "$S"; }
fail() { echo "tui-smoke: FAILED: $*"; echo "---- screen ----"; screen || true; exit 1; }
# wait_for PATTERN [SECONDS]: until the screen matches (grep -E).
wait_for() {
  local pat="$1" limit="${2:-30}" t=0
  while ! screen | grep -qE -- "$pat"; do
    sleep 0.2; t=$((t + 1))
    [ "$t" -lt $((limit * 5)) ] || fail "timed out waiting for /$pat/"
  done
}
key() { tmux -L "$S" send-keys -t "$S" "$@"; sleep 0.3; }

# SMC and EP when this build has them; the baselines stand in for what is missing.
HELP=$("$BIN" fit -h | grep -A1 -- '--method <METHOD>' | tr '\n' ' ')
METHODS=()
for m in smc ep; do grep -qE "possible values:.*\b$m\b" <<<"$HELP" && METHODS+=("$m"); done
for m in logit rankboost; do [ "${#METHODS[@]}" -lt 2 ] && METHODS+=("$m"); done
echo "tui-smoke: methods ${METHODS[*]}"

tmux -L "$S" new-session -d -s "$S" -x 120 -y 40 \
  "cd '$PWD' && '$BIN' explore demo-data/sparse_linear.csv --no-autorun --export-dir '$WORK'; echo EXITED \$?; sleep 60"
wait_for '1 Dataset'
wait_for 'no runs yet'

start_run() {
  key n
  wait_for 'New run'
  for _ in $(seq 1 12); do
    screen | grep -q "◀ $1 ▶" && break
    key Right
  done
  screen | grep -q "◀ $1 ▶" || fail "method $1 not in the form"
  key Enter
}
for m in "${METHODS[@]}"; do start_run "$m"; done

# Both finish (the second was queued behind the first).
for m in "${METHODS[@]}"; do
  wait_for "[0-9]+ +$m +done" 300
done
SCREEN=$(screen)
echo "$SCREEN"
grep -q 'mean ± 2 sd' <<<"$SCREEN" || fail "no forest plot"
grep -qE 'test ±SE|train +test' <<<"$SCREEN" || fail "no results table"
if [[ " ${METHODS[*]} " == *" smc "* ]]; then
  grep -q 'ESS/N' <<<"$SCREEN" || fail "no ESS trace"
  grep -qE 'stage [0-9]+' <<<"$SCREEN" || fail "no SMC stage count"
fi
if [[ " ${METHODS[*]} " == *" ep "* ]]; then
  grep -q 'Δ_t' <<<"$SCREEN" || fail "no EP convergence"
  grep -qE 'sweep [0-9]+' <<<"$SCREEN" || fail "no EP sweep count"
fi
# The demo has enough positives for a certificate that says something (issue 35):
# the selected run's is not vacuous, and no warning mark is waiting.
if [[ " ${METHODS[*]} " == *" smc "* || " ${METHODS[*]} " == *" ep "* ]]; then
  grep -q 'certificate: with 95% confidence, AUC ≥ 0\.[5-9]' <<<"$SCREEN" || fail "no certificate line"
  grep -q 'vacuous' <<<"$SCREEN" && fail "the demo's certificate is vacuous"
  grep -q '⚠' <<<"$SCREEN" && fail "a warning waits on the demo"
fi

# Smaller terminals (issue 36): at 100×30 and 80×24 every pane wraps what does
# not fit; no text is cut with an ellipsis, and the paired difference and the
# certificate stay on the Results pane.
for size in 100x30 80x24; do
  tmux -L "$S" resize-window -t "$S" -x "${size%x*}" -y "${size#*x}"
  for p in 1 2 3 4 5 6; do
    key "$p"
    SCREEN=$(screen)
    grep -q '…' <<<"$SCREEN" && fail "text cut at $size in pane $p"
  done
  grep -q 'vs ▶' <<<"$SCREEN" || fail "no paired difference at $size"
  if [[ " ${METHODS[*]} " == *" smc "* || " ${METHODS[*]} " == *" ep "* ]]; then
    grep -q 'certificate: with 95% confidence' <<<"$SCREEN" || fail "certificate cut at $size"
  fi
  echo "tui-smoke: $size, panes 1–6 drawn whole"
done
tmux -L "$S" resize-window -t "$S" -x 120 -y 40
key 1

key '?'
wait_for 'Help: keys'
key Escape
sleep 0.3
screen | grep -q 'Help: keys' && fail "help did not close"

# Export the first run (it has coefficients and, for SMC, a trace).
key '['
key '['
key e
wait_for 'exported'
FILE=$(ls "$WORK"/pacauc-*.json | head -1)
[ -s "$FILE" ] || fail "no exported file"
TEST_AUC=$(grep -oE '"test": [0-9.]+' "$FILE" | head -1 | awk '{printf "%.3f", $2}')
METHOD=$(grep -oE '"method": "[a-z]+"' "$FILE" | head -1 | cut -d'"' -f4)
echo "tui-smoke: exported $FILE ($METHOD, test AUC $TEST_AUC)"
screen | grep -qE "$METHOD .*done .*$TEST_AUC" || fail "the table does not show test AUC $TEST_AUC"

key q
wait_for 'EXITED 0'
# The server may already be gone with its only session: not a failure.
tmux -L "$S" kill-session -t "$S" 2>/dev/null || true

tmux -L "$S" new-session -d -s "$S" -x 120 -y 40 "cd '$PWD' && '$BIN' replay '$FILE'; echo EXITED \$?; sleep 60"
wait_for 'replaying 1 run record'
SCREEN=$(screen)
echo "$SCREEN"
grep -qE "1 +$METHOD +([a-z-]+ +)?done .*$TEST_AUC" <<<"$SCREEN" || fail "replay does not show $METHOD with test AUC $TEST_AUC"
grep -q 'mean ± 2 sd' <<<"$SCREEN" || fail "replay has no forest plot"
if [ "$METHOD" = smc ]; then grep -q 'ESS/N' <<<"$SCREEN" || fail "replay has no ESS trace"; fi
if [ "$METHOD" = ep ]; then grep -q 'Δ_t' <<<"$SCREEN" || fail "replay has no EP convergence"; fi
key q
wait_for 'EXITED 0'
echo "tui-smoke: 1 passed, 0 failed"
