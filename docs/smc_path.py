#!/usr/bin/env python3
"""Summarises SMC run records for docs/benchmarks.toml rows.

    python3 docs/smc_path.py rec.json            # PATH stages moves acceptance
    python3 docs/smc_path.py rec.json rec2.json  # also SEEDS: two seeds' agreement

PATH: the number of tempering stages, the fewest and most moves per stage and the
lowest and highest acceptance over the moving stages. SEEDS: the largest
|Δ posterior mean| over the coefficients in units of the first run's posterior sd,
and |Δ log Z| (issue 29's two-seed check: ≤ 0.05 and ≤ 0.15). TAIL (last, for records
that have it): over the moving stages, the largest share of chains the moves left
near their start, the same among the stage-start top 10% of log π/q, and the
largest sd of log π/q (src/engine/smc/left_behind.rs; "-" where not measured).
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


def tail_line(rec):
    stages = [s["left_behind"] for s in rec["details"]["path"][1:] if "left_behind" in s]
    if not stages:
        return None

    def worst(key):
        vals = [s[key] for s in stages if s.get(key) is not None]
        return "%.3f" % max(vals) if vals else "-"

    return "TAIL %s %s %s" % (worst("unjumped"), worst("unjumped_high"), worst("log_weight_sd"))


def main():
    recs = [json.load(open(p)) for p in sys.argv[1:]]
    print(path_line(recs[0]))
    if len(recs) > 1:
        print(seeds_line(recs[0], recs[1]))
    tail = tail_line(recs[0])
    if tail:
        print(tail)


if __name__ == "__main__":
    main()
