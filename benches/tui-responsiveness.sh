#!/usr/bin/env bash
# Responsiveness of the explorer while an engine runs (not part of CI):
#   [PARTICLES=N] benches/tui-responsiveness.sh [DATA.csv] [METHOD] [SECONDS]
# Starts `pacauc explore DATA --no-autorun` in tmux at 120×40, starts METHOD from
# the run form, then, while it runs: the key-to-screen latency of `?` (help
# opens / closes, measured by polling tmux capture-pane, so it includes tmux's
# own few ms) and the CPU used by each thread over SECONDS, from
# /proc/PID/task/TID/stat (the UI is the main thread, tid = pid).
set -euo pipefail
cd "$(dirname "$0")/.."
DATA="${1:-../shared/datasets/eeg.csv}"
METHOD="${2:-smc}"
WINDOW="${3:-10}"
BIN="$PWD/target/release/pacauc"
S="pacauc-measure-$$"
trap 'tmux -L "$S" kill-server 2>/dev/null || true' EXIT
screen() { tmux -L "$S" capture-pane -p -t "$S"; }
wait_for() { local t=0; while ! screen | grep -qE -- "$1"; do sleep 0.05; t=$((t+1)); [ $t -lt 2400 ] || { echo "timeout: $1"; screen; exit 1; }; done; }
now_ms() { date +%s%N | awk '{printf "%.1f", $1/1e6}'; }

LOG=$(mktemp)
tmux -L "$S" new-session -d -s "$S" -x 120 -y 40 "PACAUC_LATENCY_LOG='$LOG' '$BIN' explore '$DATA' --no-autorun; sleep 600"
wait_for '1 Dataset'
tmux -L "$S" send-keys -t "$S" n; wait_for 'New run'
for _ in $(seq 1 12); do screen | grep -q "◀ $METHOD ▶" && break; tmux -L "$S" send-keys -t "$S" Right; sleep 0.2; done
if [ -n "${PARTICLES:-}" ]; then # SMC: the 4th field below the method (prior, ϑ, γ, N)
  for _ in 1 2 3 4; do tmux -L "$S" send-keys -t "$S" Down; done
  tmux -L "$S" send-keys -t "$S" "$PARTICLES"; sleep 0.3
  screen | grep -qE "particles N +$PARTICLES" || { echo "could not set particles"; screen; exit 1; }
fi
tmux -L "$S" send-keys -t "$S" Enter
wait_for "$METHOD +. running"
: >"$LOG"
PANE_PID=$(tmux -L "$S" display -p -t "$S" '#{pane_pid}')
PID=$(pgrep -P "$PANE_PID" pacauc || echo "$PANE_PID")
HZ=$(getconf CLK_TCK)
ticks() { awk '{print $14 + $15}' "/proc/$PID/task/$1/stat"; }
declare -A T0
for t in /proc/$PID/task/*; do T0[${t##*/}]=$(ticks "${t##*/}"); done
START=$(now_ms)

LAT=()
for i in $(seq 1 10); do
  a=$(now_ms); tmux -L "$S" send-keys -t "$S" '?'; while ! screen | grep -q 'Help: keys'; do sleep 0.005; done; b=$(now_ms)
  LAT+=("$(awk -v a="$a" -v b="$b" 'BEGIN{print b-a}')")
  sleep 0.3
  a=$(now_ms); tmux -L "$S" send-keys -t "$S" Escape; while screen | grep -q 'Help: keys'; do sleep 0.005; done; b=$(now_ms)
  LAT+=("$(awk -v a="$a" -v b="$b" 'BEGIN{print b-a}')")
  sleep 0.3
done
REST=$(awk -v s="$START" -v n="$(now_ms)" -v w="$WINDOW" 'BEGIN{r=w-(n-s)/1000; print (r>0)?r:0}')
sleep "$REST"
END=$(now_ms)
still=$(screen | grep -cE "$METHOD +. running" || true)
echo "engine progress at the end: $(screen | grep -oE 'stage [0-9]+ γ [^ ]+|sweep [0-9]+ ' | head -1)"
echo "key → screen latency over ${#LAT[@]} presses (ms): $(printf '%s\n' "${LAT[@]}" | sort -n | awk '{a[NR]=$1} END{printf "min %.0f  median %.0f  max %.0f", a[1], a[int((NR+1)/2)], a[NR]}')"
echo "inside pacauc, key read → frame drawn (ms): $(sort -n "$LOG" | awk '{a[NR]=$1} END{printf "min %.2f  median %.2f  max %.2f (n = %d)", a[1], a[int((NR+1)/2)], a[NR], NR}')"
echo "CPU per thread over $(awk -v s="$START" -v e="$END" 'BEGIN{printf "%.1f", (e-s)/1000}') s (% of one core); engine still running at the end: $([ "$still" -gt 0 ] && echo yes || echo NO):"
for t in /proc/$PID/task/*; do
  tid=${t##*/}; name=$(cat "$t/comm")
  d=$(( $(ticks "$tid") - ${T0[$tid]:-0} ))
  awk -v d="$d" -v hz="$HZ" -v s="$START" -v e="$END" -v n="$name" -v tid="$tid" -v pid="$PID" \
    'BEGIN{printf "  %-18s %6.1f%%%s\n", n, 100*d/hz/((e-s)/1000), (tid==pid)?"  <- UI thread":""}'
done
