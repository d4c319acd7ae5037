#!/usr/bin/env python3
"""Regenerates the table of docs/certificate.md: the PAC-Bayes certificate on 1 − AUC
against the test set's 1 − AUC on every shared data set, for EP at its defaults
(γ by cross-validation, 25% stratified test split, seed 0, ε = 0.05).

    python3 docs/certificate_table.py DATASETS_DIR [METHOD] > table.md

Columns: the first version's one-sample form, the two-sample form with the
data-free prior (the default headline), its floor (the same bound at KL = 0),
and the split prior (`--prior-split 0.5`: the prior learned on half of each
class's training rows, the certificate on the other half, with its own m).
Each fit has a 600 s limit (LIMIT=seconds; "-" beyond). Needs `target/release/pacauc`
(or PACAUC=path).
"""

import json
import os
import subprocess
import sys
import tempfile
import time

BIN = os.environ.get("PACAUC", "target/release/pacauc")
LIMIT = float(os.environ.get("LIMIT", "600"))


def fit(path, method, extra):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "run.json")
        cmd = [BIN, "fit", path, "--method", method, "--seed", "0", "--out", out] + extra
        try:
            subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           timeout=LIMIT, check=True)
        except (subprocess.TimeoutExpired, subprocess.CalledProcessError) as e:
            return None, type(e).__name__
        with open(out) as f:
            return json.load(f), None


def f3(x):
    return "-" if x is None else f"{x:.3f}"


def main():
    data = sys.argv[1]
    method = sys.argv[2] if len(sys.argv) > 2 else "ep"
    print(f"| data | rows | m | test 1−AUC | E_ρR_n | KL | one-sample (v1) | two-sample | floor "
          f"| split prior (m) | s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    t_all = time.time()
    names = [n for n in os.listdir(data) if n.endswith(".csv")]
    # Small files first: the large ones may hit the time limit.
    for name in sorted(names, key=lambda n: os.path.getsize(os.path.join(data, n))):
        t0 = time.time()
        rec, err = fit(os.path.join(data, name), method, [])
        split, _ = fit(os.path.join(data, name), method, ["--prior-split", "0.5"])
        secs = time.time() - t0
        if rec is None or rec.get("bound") is None:
            print(f"| {name[:-4]} | | | | | | | | | {err or 'no certificate'} | {secs:.0f} |")
            continue
        b = rec["bound"]
        test = rec["auc"].get("test")
        sb = split["bound"] if split and split.get("bound") else None
        split_cell = "-" if sb is None or sb.get("split") is None else f"{sb['risk']:.3f} ({sb['m']})"
        print(f"| {name[:-4]} | {b['sizes']['n_pos'] + b['sizes']['n_neg']} | {b['m']} "
              f"| {f3(None if test is None else 1 - test)} | {b['empirical_risk']:.3f} "
              f"| {b['kl']:.1f} | {f3(b.get('one_sample_risk'))} | {b['risk']:.3f} "
              f"| {f3(b.get('floor'))} | {split_cell} | {secs:.0f} |", flush=True)
    print(f"\n{method}, all sets: {time.time() - t_all:.0f} s wall", file=sys.stderr)


if __name__ == "__main__":
    main()
