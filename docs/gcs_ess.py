#!/usr/bin/env python3
"""Effective samples per CPU second on the fixed Pima split (γ = 399, N(0, I)):
the great-circle sampler against SMC, through the real program.

SMC has no ESS of its own here: its accuracy is measured by repeating it with
different seeds; per coefficient the equivalent ESS is posterior variance over
the variance of one run's mean across seeds, and the table takes the smallest.
The sampler's ESS is its own smallest bulk ESS (its MCSEs were checked against
SMC in tests/gcs_engine.rs). CPU seconds are the process's user + system time.

Usage (from the project root, after `cargo build --release`):
    python3 docs/gcs_ess.py [SEEDS]
"""
import json
import resource
import statistics as st
import subprocess
import sys

D = "../shared/datasets/splits"
BASE = ["./target/release/pacauc", "fit", f"{D}/pima_train.csv", "--test", f"{D}/pima_test.csv",
        "--gamma", "399", "--prior-var", "1"]


def run(args):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(BASE + args, capture_output=True, text=True, check=True).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return json.loads(out), cpu


def main():
    seeds = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    smc = [run(["--method", "smc", "--seed", str(s)]) for s in range(1, seeds + 1)]
    d = len(smc[0][0]["coefficients"])
    ess = []
    for k in range(d):
        means = [r["coefficients"][k]["mean"] for r, _ in smc]
        var = st.mean(r["coefficients"][k]["sd"] ** 2 for r, _ in smc)
        ess.append(var / st.variance(means))
    smc_cpu = st.mean(c for _, c in smc)
    print(f"| SMC defaults (N = 10 000), {seeds} seeds | {smc_cpu:.2f} s | "
          f"{min(ess):.0f} (seed spread) | {min(ess) / smc_cpu:.0f} |")
    for min_ess in (400, 2000):
        rows = [run(["--method", "gcs", "--min-ess", str(min_ess), "--seed", str(s)])
                for s in (1, 2, 3)]
        cpu = st.mean(c for _, c in rows)
        e = st.mean(r["details"]["ess_bulk_min"] for r, _ in rows)
        rhat = max(r["details"]["rhat"] for r, _ in rows)
        steps = st.mean(r["details"]["steps_per_chain"] for r, _ in rows)
        print(f"| GCS 4 chains, --min-ess {min_ess}, 3 seeds | {cpu:.2f} s | {e:.0f} "
              f"(bulk, smallest; R-hat ≤ {rhat:.4f}; {steps:.0f} steps/chain) | {e / cpu:.0f} |")


if __name__ == "__main__":
    main()
