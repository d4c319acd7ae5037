#!/usr/bin/env python3
"""Summarises SMC run records for docs/benchmarks.toml rows.

    python3 docs/smc_path.py rec.json            # PATH stages moves acceptance
    python3 docs/smc_path.py rec.json rec2.json  # also SEEDS: two seeds' agreement

PATH: the number of tempering stages, the fewest and most moves per stage and the
lowest and highest acceptance over the moving stages. SEEDS: the largest
|Δ posterior mean| over the coefficients in units of the first run's posterior sd,
and |Δ log Z| (issue 29's two-seed check: ≤ 0.05 and ≤ 0.15).
"""
import json
import sys


def path_line(rec):
    path = rec["details"]["path"][1:]
    moves = [s["moves"] for s in path]
    acc = [s["acceptance"] for s in path]
    return "PATH %d %d %d %.2f %.2f" % (len(path), min(moves), max(moves), min(acc), max(acc))


def seeds_line(a, b):
    worst = max(abs(x["mean"] - y["mean"]) / x["sd"]
                for x, y in zip(a["coefficients"], b["coefficients"]))
    return "SEEDS %.3f %.3f" % (worst, abs(a["log_evidence"] - b["log_evidence"]))


def main():
    recs = [json.load(open(p)) for p in sys.argv[1:]]
    print(path_line(recs[0]))
    if len(recs) > 1:
        print(seeds_line(recs[0], recs[1]))


if __name__ == "__main__":
    main()
