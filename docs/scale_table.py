"""One size of issue 30's scale table: every method on a generated N × 20 file.

    python3 docs/scale_table.py --rows N [--pacauc BIN] [--work DIR]
                                [--python PY] [--smc-seconds S] [--keep]

Generates F.csv (N rows, `gen-demo --rows N`, 20 features) for training and
T.csv (N/4 rows, another seed, the same model) for testing, and fits with
`--test T.csv`: every method trains on all N rows, and scikit-learn's
reference (docs/sklearn_reference.py, run with PY: a Python with
scikit-learn and pyarrow) sees the same training rows. Then, each timed with
/usr/bin/time (wall, user + sys CPU, peak RSS of the whole command):
load (`bench-load`), logit, VB (defaults), EP (`--pairs 4000000 --gamma
1000`), the certificate and the IS check (their own CPU seconds from the VB
and EP records), predict (the logit record on F.csv), and SMC's cost
estimate (SMC is stopped after S seconds if it does not refuse). Prints a
Markdown table, one row per method, and the load average before and after.
Files go to DIR (default /tmp/pacauc-scale-N) and are deleted unless --keep.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def timed(cmd, cwd, timeout=None, check=True):
    """Runs `cmd` (a list) under /usr/bin/time; (wall, cpu, peak MB, output).
    With `timeout`, coreutils' `timeout` stops the program itself (wall None)."""
    stop = ["timeout", str(timeout)] if timeout else []
    full = ["/usr/bin/time", "-f", "TIMED %e %U %S %M"] + stop + cmd
    p = subprocess.run(full, cwd=cwd, capture_output=True, text=True)
    out = p.stdout + p.stderr
    if timeout and p.returncode == 124:
        return None, None, None, out + "\n(stopped after %s s)" % timeout
    m = re.search(r"TIMED ([0-9.]+) ([0-9.]+) ([0-9.]+) ([0-9]+)", out)
    if not m or (check and p.returncode != 0):
        sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}\n{out[-3000:]}")
    wall, user, sys_, kb = m.groups()
    return float(wall), float(user) + float(sys_), int(kb) / 1024, out


class Lines:
    """The table, printed row by row as the runs end (a long run shows its progress)."""

    def __init__(self, n):
        print(f"\n| method, {n} × 20 | wall s | CPU s | peak MB | accuracy |")
        print("|---|---|---|---|---|", flush=True)

    def append(self, line):
        print(line, flush=True)


def load_avg():
    return "%.1f %.1f %.1f" % os.getloadavg()


SUMMARY = []


def row(method, wall, cpu, peak, accuracy, short=None):
    """One table row; `short` (a name) also puts it on the SUMMARY line."""
    f = lambda v, spec: "—" if v is None else format(v, spec)
    if short:
        SUMMARY.append(f"{short} {f(wall, '.1f')} s wall / {f(cpu, '.1f')} CPU s"
                       + ("" if peak is None else f" / {peak:.0f} MB"))
    return f"| {method} | {f(wall, '.1f')} | {f(cpu, '.1f')} | {f(peak, '.0f')} | {accuracy} |"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, required=True)
    ap.add_argument("--pacauc", default=os.path.join(HERE, "..", "target", "release", "pacauc"))
    ap.add_argument("--work", default=None)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--smc-seconds", type=float, default=60)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--ep-pairs", default=None,
                    help="B1,B2,…: instead of the table, EP `--gamma 1000 --pairs B` for each B "
                         "(and `--method vb --optimizer full-batch` if --vb-full): posterior "
                         "means against the largest B's, in its posterior sds; test AUCs")
    ap.add_argument("--vb-full", action="store_true")
    a = ap.parse_args()
    if a.ep_pairs:
        return pair_study(a)
    pac = os.path.abspath(a.pacauc)
    work = a.work or f"/tmp/pacauc-scale-{a.rows}"
    os.makedirs(work, exist_ok=True)
    n = a.rows
    print(f"scale table, {n} rows × 20 (test file {n // 4} rows); load before: {load_avg()}",
          flush=True)
    lines = Lines(n)
    try:
        t0 = time.time()
        timed([pac, "gen-demo", "--rows", str(n), "--out", "F.csv"], work)
        timed([pac, "gen-demo", "--rows", str(n // 4), "--seed", "7", "--out", "T.csv"], work)
        size = os.path.getsize(os.path.join(work, "F.csv")) / 1e6
        print(f"generated in {time.time() - t0:.0f} s: F.csv {size:.0f} MB", flush=True)

        w, c, pk, out = timed([pac, "bench-load", "F.csv"], work)
        mbs = re.search(r"\(([0-9]+) MB/s\)", out).group(1)
        lines.append(row("load (CSV, `bench-load`)", w, c, pk, f"{size:.0f} MB, {mbs} MB/s wall",
                         "load"))

        fit = [pac, "fit", "F.csv", "--test", "T.csv"]
        w, c, pk, _ = timed(fit + ["--method", "logit", "--out", "logit.json"], work)
        rec = json.load(open(os.path.join(work, "logit.json")))
        ref = subprocess.run([a.python, os.path.join(HERE, "sklearn_reference.py"),
                              os.path.join(work, "F.csv"), os.path.join(work, "logit.json")],
                             capture_output=True, text=True)
        m = re.search(r"REFERENCE (.*)", ref.stdout)
        acc = m.group(1) if m else "sklearn reference failed: " + (ref.stderr or ref.stdout)[-300:]
        lines.append(row("logit (λ by CV)", w, c, pk,
                         f"λ = {rec['details']['lambda']:.4g}, test AUC {rec['auc']['test']:.4f}; {acc}",
                         "logit"))
        m = re.search(r"max \|Δβ\|/‖β‖ ([0-9.e+-]+)", acc)
        SUMMARY.append(f"(sklearn: max |Δβ|/‖β‖ {m.group(1) if m else '?'})")

        recs = {}
        for name, extra in [("vb", ["--method", "vb"]),
                            ("ep", ["--method", "ep", "--pairs", "4000000", "--gamma", "1000"])]:
            w, c, pk, _ = timed(fit + extra + ["--out", f"{name}.json"], work)
            rec = json.load(open(os.path.join(work, f"{name}.json")))
            recs[name] = rec
            d = rec["details"]
            what = ("VB defaults (Adam, γ by theory %.4g)" % rec["gamma"] if name == "vb" else
                    "EP `--pairs 4000000 --gamma 1000`")
            extra_acc = ""
            if "pair_sample" in d:
                extra_acc = f"; γ·sd(R_B) {d['pair_sample'].get('gamma_sd_risk', float('nan')):.3f}"
            lines.append(row(what, w, c, pk,
                             f"test AUC {rec['auc']['test']:.4f}{extra_acc} (whole run: load, fit, "
                             f"certificate, IS check)", name.upper()))
        for name, rec in recs.items():
            d, b = rec["details"], rec.get("bound") or {}
            cert = d.get("certificate_cpu_seconds")
            lines.append(row(f"certificate ({name.upper()})", d.get("certificate_seconds"), cert,
                             None, f"1 − AUC ≤ {b.get('risk', float('nan')):.4f} "
                                   f"(E_ρR_n {b.get('empirical_risk', float('nan')):.4f})",
                             f"certificate ({name.upper()})"))
            ic = d.get("is_check") or {}
            if ic:
                lines.append(row(f"IS check ({name.upper()})", ic.get("seconds"), ic.get("cpu_seconds"),
                                 None, f"{ic.get('draws')} draws, k̂ {ic.get('khat', float('nan')):.2f}"
                                       f" ({'trusted' if ic.get('trusted') else 'untrusted'}), "
                                       f"ESS {ic.get('ess', float('nan')):.0f}",
                                 f"IS check ({name.upper()})"))

        w, c, pk, _ = timed([pac, "predict", "logit.json", "F.csv", "--out", "scores.csv"], work)
        lines.append(row("predict (logit record, F.csv)", w, c, pk, f"{n} scores written",
                         "predict"))

        w, c, pk, out = timed(fit + ["--method", "smc", "--out", "smc.json"], work,
                              timeout=a.smc_seconds, check=False)
        est = re.search(r"cost estimate: ([^\n]*)", out)
        refused = "refus" in out.lower() or "--ignore-cost" in out
        state = ("refused before the run" if refused and w is not None else
                 f"started (stopped by the table after {a.smc_seconds:.0f} s)" if w is None else
                 "ran")
        smc = f"SMC defaults: {state}; estimate {est.group(1) if est else '(none printed)'}"
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(f"\n{smc}")
    print(f"\nSUMMARY {'; '.join(SUMMARY)}; {smc}")
    print(f"\nload after: {load_avg()}; peak MB of the whole command (load included); certificate and "
          f"IS check: their own seconds from the record (peak: the fit's)")


def coefs(rec):
    return {c["name"]: (c["mean"], c["sd"]) for c in rec["coefficients"]}


def pair_study(a):
    pac = os.path.abspath(a.pacauc)
    n = a.rows
    work = a.work or f"/tmp/pacauc-scale-{n}"
    os.makedirs(work, exist_ok=True)
    print(f"EP across pair samples, {n} rows × 20 (test file {n // 4} rows); load before: "
          f"{load_avg()}", flush=True)
    try:
        for f, rows, seed in [("F.csv", n, "20141208"), ("T.csv", n // 4, "7")]:
            if not os.path.exists(os.path.join(work, f)):
                timed([pac, "gen-demo", "--rows", str(rows), "--seed", seed, "--out", f], work)
        fit = [pac, "fit", "F.csv", "--test", "T.csv", "--threads", "1"]
        runs = []
        for b in [int(float(v)) for v in a.ep_pairs.split(",")]:
            w, c, pk, _ = timed(fit + ["--method", "ep", "--gamma", "1000", "--pairs", str(b),
                                       "--is-draws", "0", "--out", f"ep{b}.json"], work)
            runs.append((f"EP B = {b:.3g}", w, c, pk, json.load(open(os.path.join(work, f"ep{b}.json")))))
        if a.vb_full:
            w, c, pk, out = timed(fit + ["--method", "vb", "--gamma", "1000", "--optimizer",
                                         "full-batch", "--is-draws", "0", "--out", "vbfull.json"],
                                  work, timeout=a.smc_seconds, check=False)
            est = re.search(r"cost estimate: ([^\n]*)", out)
            print(f"VB full batch (all pairs): {'stopped or refused' if w is None or 'refus' in out.lower() else 'ran'}; "
                  f"estimate {est.group(1) if est else '(none)'}")
        ref = coefs(runs[-1][4])
        print(f"\n| run, {n} × 20, γ = 1000, one thread | wall s | CPU s | peak MB | accuracy |")
        print("|---|---|---|---|---|")
        for name, w, c, pk, rec in runs:
            co = coefs(rec)
            shift = max(abs(co[k][0] - ref[k][0]) / ref[k][1] for k in ref)
            sd_ratio = max(abs(co[k][1] / ref[k][1] - 1) for k in ref)
            gsd = rec["details"].get("pair_sample", {}).get("gamma_sd_risk", float("nan"))
            print(row(name, w, c, pk, f"test AUC {rec['auc']['test']:.5f}; means within {shift:.3f} "
                                      f"sd of {runs[-1][0]}'s, sds within {100 * sd_ratio:.1f}%; "
                                      f"γ·sd(R_B) {gsd:.3f}"))
        print(f"\nload after: {load_avg()}")
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
