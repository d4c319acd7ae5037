#!/usr/bin/env bash
# Watching runs from anywhere, driven in tmux at 120×40 from an empty folder:
# 1. `pacauc` opens the demo built into the binary and runs EP and SMC;
# 2. `pacauc fit demo --method smc --events r.jsonl &`; `pacauc watch r.jsonl`
#    shows stages advancing; `q` leaves the fit running; watching again
#    resumes; `kill -9` the fit and the watch says interrupted;
# 3. a run started from the form in the background (Ctrl-B) survives killing
#    the explorer's tmux session, and `pacauc watch pacauc-runs` attaches to it.
# Prints the screens it checks. BIN=path/to/pacauc to skip the build.
set -euo pipefail
cd "$(dirname "$0")/.."

command -v tmux >/dev/null || (apt-get update -qq && apt-get install -y -qq tmux >/dev/null)
if [ -z "${BIN:-}" ]; then
  cargo build --release --quiet
  BIN="$PWD/target/release/pacauc"
fi
WORK=$(mktemp -d)
S="pacauc-watch-$$"
FIT=""
cleanup() {
  tmux -L "$S" kill-server 2>/dev/null || true
  [ -n "$FIT" ] && kill -9 "$FIT" 2>/dev/null || true
  for f in "$WORK"/pacauc-runs/*.jsonl; do
    [ -e "$f" ] || continue
    pid=$(head -1 "$f" | grep -oE '"pid":[0-9]+' | cut -d: -f2)
    [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null || true
  done
  rm -rf "$WORK"
}
trap cleanup EXIT

screen() { tmux -L "$S" capture-pane -p -t "$1"; }
fail() { echo "watch-smoke: FAILED: $*"; for s in $(tmux -L "$S" ls -F '#S' 2>/dev/null); do echo "---- $s ----"; screen "$s" || true; done; exit 1; }
wait_for() {
  local s="$1" pat="$2" limit="${3:-60}" t=0
  while ! screen "$s" | grep -qE -- "$pat"; do
    sleep 0.2; t=$((t + 1))
    [ "$t" -lt $((limit * 5)) ] || fail "timed out waiting for /$pat/ in $s"
  done
}
key() { tmux -L "$S" send-keys -t "$1" "${@:2}"; sleep 0.3; }
stage() { screen "$1" | grep -oE 'stage [0-9]+' | head -1 | awk '{print $2}'; }
open() { tmux -L "$S" new-session -d -s "$1" -x 120 -y 40 "cd '$WORK' && $2; echo EXITED \$?; sleep 120"; }

# 1. The demo from an empty folder.
open demo "'$BIN'"
wait_for demo '[0-9]+ +ep +.*done' 300
wait_for demo '[0-9]+ +smc +.*done' 600
screen demo | grep -q 'sparse_linear\|demo' || fail "the demo is not named"
echo "watch-smoke: the demo opens from $WORK and runs EP and SMC"
key demo q
wait_for demo 'EXITED 0'
tmux -L "$S" kill-session -t demo

# 2. A fit in the background of a shell, watched, detached, watched again, killed.
(cd "$WORK" && exec "$BIN" fit demo --method smc --particles 40000 --events r.jsonl >/dev/null 2>&1) &
FIT=$!
open w1 "'$BIN' watch r.jsonl"
wait_for w1 'stage [0-9]+' 120
A=$(stage w1)
for _ in $(seq 1 600); do B=$(stage w1); [ "${B:-0}" -gt "$A" ] && break; sleep 0.2; done
[ "${B:-0}" -gt "$A" ] || fail "the stage does not advance ($A)"
screen w1
echo "watch-smoke: watch shows stages advancing ($A → $B)"
key w1 q
wait_for w1 'EXITED 0'
kill -0 "$FIT" || fail "q ended the fit"
open w2 "'$BIN' watch r.jsonl"
wait_for w2 'running' 60
for _ in $(seq 1 600); do C=$(stage w2); [ "${C:-0}" -gt "$B" ] && break; sleep 0.2; done
[ "${C:-0}" -gt "$B" ] || fail "watching again does not resume ($B)"
echo "watch-smoke: watching again resumes (stage $C)"
kill -9 "$FIT"
wait_for w2 'interrupted' 30
screen w2
echo "watch-smoke: kill -9 reads interrupted"
FIT=""
key w2 q
tmux -L "$S" kill-session -t w2
tmux -L "$S" kill-session -t w1

# 3. A background run from the form survives its explorer's tmux session.
open bg "'$BIN' explore demo --no-autorun"
wait_for bg 'no runs yet'
key bg n
wait_for bg 'New run'
for _ in $(seq 1 12); do screen bg | grep -q '◀ smc ▶' && break; key bg Right; done
# A run long enough to outlive the session: 60000 particles.
for _ in $(seq 1 30); do screen bg | grep -q 'Size N of the particle cloud' && break; key bg Down; done
key bg 6 0 0 0 0
wait_for bg 'particles 60000'
key bg C-b
wait_for bg 'pacauc-runs/' 30
for _ in $(seq 1 150); do
  LOG=$(ls "$WORK"/pacauc-runs/*.jsonl 2>/dev/null | head -1)
  [ -n "$LOG" ] && [ -s "$LOG" ] && break; sleep 0.2
done
[ -s "$LOG" ] || fail "no background log"
PID=$(head -1 "$LOG" | grep -oE '"pid":[0-9]+' | cut -d: -f2)
grep -q '"end"' "$LOG" && fail "the background run ended before the session was killed"
tmux -L "$S" kill-session -t bg
sleep 1
kill -0 "$PID" || fail "the background run died with its explorer's session"
echo "watch-smoke: background run $PID survives its explorer"
open w3 "'$BIN' watch pacauc-runs"
wait_for w3 'smc +gauss +. running' 60
screen w3
echo "watch-smoke: pacauc watch pacauc-runs attaches to it"
wait_for w3 'smc +gauss +done' 600
echo "watch-smoke: the background run finished: $(grep -c . "$LOG") lines in $LOG"
key w3 q
echo "watch-smoke: 1 passed, 0 failed"
