#!/usr/bin/env python3
"""Regenerates the table of docs/certificate.md: the PAC-Bayes certificate on 1 − AUC
against the test set's 1 − AUC on every shared data set, for EP at its defaults
(γ = n, 25% stratified test split, seed 0, ε = 0.05).

    python3 docs/certificate_table.py DATASETS_DIR [METHOD] [--only a,b] [--records DIR]
        [--extra '--gamma n'] > table.md

One fit per set, with `--prior-split 0.5`: its record holds the split-prior certificate
(the prior learned on half of each class's training rows, the certificate on the other
half, with its own m) and, beside it, the data-free one. Columns: for the fit's own
Gaussian ρ, the first version's one-sample form and the two-sample form with the data-free
prior; the two-sample form at the best spread N(μ, s·V) (the default headline); the floor
(the two-sample bound at KL = 0 for the fit's ρ); and the split prior's certificate. Each fit has a
limit of LIMIT seconds (default 1800; "-" beyond). `--records DIR` keeps each run record
as DIR/NAME.json. Needs `target/release/pacauc` (or PACAUC=path).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

BIN = os.environ.get("PACAUC", "target/release/pacauc")
LIMIT = float(os.environ.get("LIMIT", "1800"))


def fit(path, method, extra, keep=None):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "run.json")
        cmd = [BIN, "fit", path, "--method", method, "--seed", "0", "--out", out] + extra
        try:
            subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           timeout=LIMIT, check=True)
        except (subprocess.TimeoutExpired, subprocess.CalledProcessError) as e:
            return None, type(e).__name__
        if keep:
            shutil.copy(out, keep)
        with open(out) as f:
            return json.load(f), None


def f3(x):
    return "-" if x is None else f"{x:.3f}"


def data_free(bound):
    """The data-free certificate: the headline, or the one kept beside a split prior's."""
    if bound.get("split") is None:
        return bound
    for o in bound.get("others", []):
        if o.get("split") is None and o.get("rho") == "gaussian":
            return o
    return None


def own(bound):
    """The fit's own Gaussian (spread s = 1) when another spread won."""
    if bound.get("rho_spread") is None:
        return bound
    return next((o for o in bound.get("others", []) if o.get("rho_spread") is None), bound)


HEADER = ("| data | rows | m | test 1−AUC | E_ρR_n | KL | one-sample (v1) | two-sample, fit's ρ "
          "| two-sample, best spread (s) | floor | split prior (m) | s |\n"
          "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")


def row(name, rec, secs, err):
    if rec is None or rec.get("bound") is None:
        return f"| {name} | | | | | | | | | | {err or 'no certificate'} | {secs:.0f} |"
    head = rec["bound"]
    b = data_free(head)
    o = own(b)
    test = rec["auc"].get("test")
    split = "-" if head.get("split") is None else f"{head['risk']:.3f} ({head['m']})"
    return (f"| {name} | {b['sizes']['n_pos'] + b['sizes']['n_neg']} | {b['m']} "
            f"| {f3(None if test is None else 1 - test)} | {o['empirical_risk']:.3f} "
            f"| {o['kl']:.1f} | {f3(o.get('one_sample_risk'))} | {o['risk']:.3f} "
            f"| {b['risk']:.3f} ({b.get('rho_spread') or 1:g}) | {f3(o.get('floor'))} | {split} "
            f"| {secs:.0f} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("data")
    ap.add_argument("method", nargs="?", default="ep")
    ap.add_argument("--only", help="comma-separated set names (without .csv)")
    ap.add_argument("--records", help="keep each run record as DIR/NAME.json")
    ap.add_argument("--no-header", action="store_true")
    ap.add_argument("--extra", default="", help="more fit arguments, e.g. '--gamma n'")
    ap.add_argument("--from-records", action="store_true",
                    help="print the rows of the records kept in --records, fitting nothing")
    a = ap.parse_args()
    if a.records:
        os.makedirs(a.records, exist_ok=True)
    if a.from_records:
        print(HEADER)
        for f in sorted(os.listdir(a.records)):
            with open(os.path.join(a.records, f)) as fh:
                rec = json.load(fh)
            print(row(f[:-5], rec, rec.get("seconds", {}).get("total", 0.0), None))
        return
    if not a.no_header:
        print(HEADER)
    t_all = time.time()
    names = [n for n in os.listdir(a.data) if n.endswith(".csv")]
    if a.only:
        names = [n for n in names if n[:-4] in a.only.split(",")]
    # Small files first: the large ones may hit the time limit.
    for name in sorted(names, key=lambda n: os.path.getsize(os.path.join(a.data, n))):
        t0 = time.time()
        keep = os.path.join(a.records, name[:-4] + ".json") if a.records else None
        rec, err = fit(os.path.join(a.data, name), a.method, ["--prior-split", "0.5"] + a.extra.split(), keep)
        print(row(name[:-4], rec, time.time() - t0, err), flush=True)
    print(f"\n{a.method}, all sets: {time.time() - t_all:.0f} s wall", file=sys.stderr)


if __name__ == "__main__":
    main()
