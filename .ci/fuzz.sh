#!/usr/bin/env bash
# Runs every fuzz target for SECONDS (default 30) from the committed corpus.
# Installs cargo-fuzz and the nightly toolchain when missing. New corpus entries
# go to a scratch folder, so a CI run leaves the tree as it found it.
# Usage: bash .ci/fuzz.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-30}"
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(csv_dataset run_record argv_spec event_log)
fi
rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
# A short run (CI's 30 s) builds at opt-level 1 with 16 codegen units: the
# sanitized build of the whole crate is most of this step's time (cargo-fuzz's
# default of one codegen unit leaves a core idle), and a smoke run needs the
# harness built and the corpus replayed under the sanitizer more than peak
# executions per second. A campaign (>= 300 s per target) builds at opt-level 3
# with one codegen unit.
opt=3 cgu=1
if [ "$secs" -lt 300 ]; then opt=1 cgu=16; fi
export CARGO_PROFILE_RELEASE_OPT_LEVEL="${FUZZ_OPT_LEVEL:-$opt}"
echo "fuzz: building at opt-level $CARGO_PROFILE_RELEASE_OPT_LEVEL, $cgu codegen unit(s) (FUZZ_OPT_LEVEL overrides the level)"
# Inputs as large as the committed records; memory capped per run.
max_len=400000
for t in "${targets[@]}"; do
  scratch="$(mktemp -d)"
  echo "fuzz: $t for ${secs}s"
  log="$(mktemp)"
  status=0
  cargo +nightly fuzz run --codegen-units "$cgu" "$t" "$scratch" "fuzz/corpus/$t" -- \
    -max_total_time="$secs" -max_len="$max_len" -rss_limit_mb=4096 -timeout=20 \
    -print_final_stats=1 >"$log" 2>&1 || status=$?
  grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb|SUMMARY|==[0-9]+==)' "$log" || true
  if [ "$status" -ne 0 ]; then tail -40 "$log"; fi
  rm -rf "$scratch" "$log"
  if [ "$status" -ne 0 ]; then
    echo "fuzz: $t FAILED (exit $status); reproduce with: cargo +nightly fuzz run $t fuzz/artifacts/$t/<file>"
    exit 1
  fi
done
echo "fuzz: ${#targets[@]} target(s) ran ${secs}s each with no finding"
