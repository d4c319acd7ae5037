#!/usr/bin/env python3
"""EP flip check (issue 28): two pacauc binaries, interleaved cell by cell.

    python3 docs/ep_flip.py A B OUT [--parts reproduce,auto,eeg,bench] [--cells D:M,...]
        [--splits 0,1,2] [--auto F,...] [--bench F,...] [--b-args "..."] [--rounds 3]

A and B are binaries (A: main's, B: the one under test); each command runs
under `nice -n 10 /usr/bin/time` with `--threads 1`, A then B, the order
alternating from cell to cell, each binary in its own folder under OUT. CPU s
are user + system of the whole invocation. Parts:
- reproduce: `reproduce --only D --methods M --splits k+1` (splits below k are
  already in the binary's folder, so only split k runs) for the 72 cells ep,
  ep-ard, ep-ss, gp-ep × pima, credit, spect_train, glass, sonar, colon × 0–2:
  record?, test AUC, log Z, sweeps (final fit; ARD: + every evidence
  iteration; GP-EP: + the ℓ search), grid points dropped, power EP's α.
- auto: `fit F --method ep --gamma auto --is-draws 0` on spectf, spect, claims
  (docs/messy_data.py), pima, glass: dropped grid points, γ/n, AUC.
- ssauto: spike-and-slab `--gamma auto` on demo-data/sparse_linear.csv as
  tests/cli_spike_slab_cv.rs runs it (`--inclusion-prior 0.2 --folds 3
  --gamma-grid 0.25,1,4`): dropped grid points, γ, AUC.
- eeg: `reproduce --only eeg --methods ep --splits 1` (≈ 250 CPU s each).
- bench: `bench-ep F --repeats 3 --json`, `--rounds` interleaved rounds on
  credit, sonar, ionosphere; the ratio B ÷ A of the median EP CPU s.
`--b-args` are added to B's commands only (e.g. "--ep-start classic
--ep-controller classic" to compare one binary's two drivers; then give the
same binary twice). Results: OUT/results.jsonl (one line per run) and a table
on stdout; `--table` only prints the table of an existing OUT.
"""
import argparse, json, os, shlex, statistics, subprocess, sys

DATA = os.environ.get("PACAUC_DATASETS", "/work/shared/datasets")
SETS = ["pima", "credit", "spect_train", "glass", "sonar", "colon"]
METHODS = ["ep", "ep-ard", "ep-ss", "gp-ep"]
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def timed(cmd, folder):
    """Runs cmd (a list) in folder under nice and /usr/bin/time: (CPU s, rc, stdout's tail)."""
    os.makedirs(folder, exist_ok=True)
    tfile = os.path.join(folder, "time.txt")
    full = ["nice", "-n", "10", "/usr/bin/time", "-f", "%U %S", "-o", tfile] + cmd
    p = subprocess.run(full, cwd=folder, capture_output=True, text=True)
    try:
        u, s = open(tfile).read().split()[-2:]
        cpu = float(u) + float(s)
    except (OSError, ValueError):
        cpu = float("nan")
    return cpu, p.returncode, p.stdout[-3000:]


def record_cv(rec):
    """A record's CV details: GP-EP keeps them under details.gamma.cv, the others under details.cv."""
    d = rec.get("details") or {}
    return d.get("cv") or (d.get("gamma") or {}).get("cv") or {}


def summary(rec):
    """The figures of one EP record (reproduce cell or fit)."""
    if rec is None:
        return {"record": False}
    d = rec.get("details", {})
    sweeps = d.get("sweeps") or 0
    ard = d.get("ard") or {}
    sweeps += sum(t.get("sweeps", 0) for t in ard.get("trace", []))
    search = ((d.get("lengthscale") or {}).get("search") or {})
    sweeps += sum(c.get("sweeps", 0) or 0 for c in search.get("curve", []))
    power = d.get("power") or {}
    gamma = rec.get("gamma")
    g = d.get("gamma") or {}
    cv = record_cv(rec)
    auc = rec.get("auc") or {}
    return {
        "record": True,
        "converged": rec.get("converged"),
        "auc_test": auc.get("test"),
        "auc_train": auc.get("train"),
        "log_z": rec.get("log_evidence"),
        "gamma": gamma,
        "gamma_over_n": g.get("over_n"),
        "sweeps": sweeps,
        "dropped": len(cv.get("dropped", []) or []),
        "power_alpha": power.get("alpha") if isinstance(power, dict) else None,
        "warnings": [w.get("code", w) if isinstance(w, dict) else w for w in rec.get("warnings", [])],
    }


def load(path):
    try:
        return json.load(open(path))
    except (OSError, ValueError):
        return None


ONLY = []


def pairs_order(i, runs):
    runs = [r for r in runs if not ONLY or r in ONLY]
    return runs if i % 2 == 0 else runs[::-1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("out")
    ap.add_argument("--parts", default="reproduce,auto,eeg")
    ap.add_argument("--cells", default="", help="D:M,... (default: all 24 × splits)")
    ap.add_argument("--splits", default="0,1,2")
    ap.add_argument("--auto", default="spectf,spect,claims,pima,glass")
    ap.add_argument("--bench", default="credit,sonar,ionosphere")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--b-args", default="")
    ap.add_argument("--table", action="store_true")
    ap.add_argument("--only-bin", default="", help="A or B: run one binary only (e.g. a baseline)")
    o = ap.parse_args()
    out = os.path.abspath(o.out)
    os.makedirs(out, exist_ok=True)
    res_path = os.path.join(out, "results.jsonl")
    if not o.table:
        run_all(o, out, res_path)
    table(res_path)


def run_all(o, out, res_path):
    bins = {"A": (os.path.abspath(o.a), []), "B": (os.path.abspath(o.b), shlex.split(o.b_args))}
    ONLY.extend(x for x in o.only_bin.split(",") if x)
    parts = o.parts.split(",")
    res = open(res_path, "a")
    i = 0

    def emit(row):
        res.write(json.dumps(row) + "\n")
        res.flush()
        print(json.dumps(row), flush=True)

    if "reproduce" in parts:
        cells = [c.split(":") for c in o.cells.split(",") if c] or [
            (d, m) for d in SETS for m in METHODS]
        for k in [int(s) for s in o.splits.split(",")]:
            for d, m in cells:
                for who in pairs_order(i, ["A", "B"]):
                    exe, extra = bins[who]
                    folder = os.path.join(out, who, "repro", f"{d}_{m}")
                    cmd = [exe, "reproduce", "--only", d, "--methods", m, "--splits", str(k + 1),
                           "--threads", "1", "--data", DATA, "--out", "R"] + extra
                    cpu, rc, tail = timed(cmd, folder)
                    rec = load(os.path.join(folder, "R", "records", f"{d}_{m}_{k}.json"))
                    emit({"part": "reproduce", "cell": f"{d} {m} {k}", "bin": who, "cpu": cpu,
                          "rc": rc, **summary(rec)})
                i += 1
    if "auto" in parts:
        messy = os.path.join(out, "messy")
        if not os.path.exists(os.path.join(messy, "claims.csv")):
            subprocess.run([sys.executable, os.path.join(REPO, "docs", "messy_data.py"), messy],
                           check=True, capture_output=True)
        for f in o.auto.split(","):
            path = os.path.join(messy, f + ".csv") if f in ("claims", "clinic", "bank") \
                else os.path.join(DATA, f + ".csv")
            for who in pairs_order(i, ["A", "B"]):
                exe, extra = bins[who]
                folder = os.path.join(out, who, "auto", f)
                cmd = [exe, "fit", path, "--method", "ep", "--gamma", "auto", "--threads", "1",
                       "--is-draws", "0", "--out", "r.json"] + extra
                cpu, rc, tail = timed(cmd, folder)
                emit({"part": "auto", "cell": f, "bin": who, "cpu": cpu, "rc": rc,
                      **summary(load(os.path.join(folder, "r.json")))})
            i += 1
    if "ssauto" in parts:
        for who in pairs_order(i, ["A", "B"]):
            exe, extra = bins[who]
            folder = os.path.join(out, who, "ssauto")
            cmd = [exe, "fit", os.path.join(REPO, "demo-data", "sparse_linear.csv"), "--method",
                   "ep", "--prior", "spike-slab", "--gamma", "auto", "--inclusion-prior", "0.2",
                   "--folds", "3", "--gamma-grid", "0.25,1,4", "--threads", "1", "--is-draws",
                   "0", "--out", "r.json"] + extra
            cpu, rc, tail = timed(cmd, folder)
            emit({"part": "ssauto", "cell": "sparse_linear ss", "bin": who, "cpu": cpu, "rc": rc,
                  **summary(load(os.path.join(folder, "r.json")))})
        i += 1
    if "eeg" in parts:
        for who in pairs_order(i, ["A", "B"]):
            exe, extra = bins[who]
            folder = os.path.join(out, who, "eeg")
            cmd = [exe, "reproduce", "--only", "eeg", "--methods", "ep", "--splits", "1",
                   "--threads", "1", "--data", DATA, "--out", "R"] + extra
            cpu, rc, tail = timed(cmd, folder)
            emit({"part": "eeg", "cell": "eeg ep 0", "bin": who, "cpu": cpu, "rc": rc,
                  **summary(load(os.path.join(folder, "R", "records", "eeg_ep_0.json")))})
        i += 1
    if "bench" in parts:
        for r in range(o.rounds):
            for f in o.bench.split(","):
                for who in pairs_order(i, ["A", "B"]):
                    exe, extra = bins[who]
                    folder = os.path.join(out, who, "bench")
                    cmd = [exe, "bench-ep", os.path.join(DATA, f + ".csv"), "--repeats", "3",
                           "--threads", "1", "--json"] + extra
                    cpu, rc, tail = timed(cmd, folder)
                    try:
                        j = json.loads(tail.strip().splitlines()[-1]) if rc == 0 else {}
                    except (ValueError, IndexError):
                        j = {}
                    emit({"part": "bench", "cell": f, "bin": who, "round": r, "cpu": cpu,
                          "rc": rc, "ep_cpu_s": j.get("ep_cpu_s"), "sweeps": j.get("sweeps")})
                i += 1


def fmt(x, spec):
    return "–" if x is None else format(x, spec)


def table(res_path):
    rows = [json.loads(l) for l in open(res_path)] if os.path.exists(res_path) else []
    last = {}
    for r in rows:
        if r["part"] != "bench":
            last[(r["part"], r["cell"], r["bin"])] = r
    keys = []
    for (p, c, _) in last:
        if (p, c) not in keys:
            keys.append((p, c))
    print("| part | cell | record A/B | test AUC A → B | log Z A → B | γ/n A → B | dropped | "
          "power α | sweeps A → B | CPU s A → B |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    tot = {"A": 0.0, "B": 0.0}
    for p, c in keys:
        a, b = last.get((p, c, "A"), {}), last.get((p, c, "B"), {})
        for who, r in (("A", a), ("B", b)):
            tot[who] += r.get("cpu") or 0.0
        same = a.get("log_z") is not None and b.get("log_z") is not None and \
            abs(a["log_z"] - b["log_z"]) < 1e-3 and a.get("auc_test") == b.get("auc_test")
        mark = "" if same else " *"
        has_test = a.get("auc_test") is not None or b.get("auc_test") is not None
        auc = "auc_test" if has_test else "auc_train"
        print(f"| {p} | {c}{mark} | {'y' if a.get('record') else 'n'}/{'y' if b.get('record') else 'n'} "
              f"| {fmt(a.get(auc), '.4f')} → {fmt(b.get(auc), '.4f')} "
              f"| {fmt(a.get('log_z'), '.3f')} → {fmt(b.get('log_z'), '.3f')} "
              f"| {fmt(a.get('gamma_over_n'), '.4g')} → {fmt(b.get('gamma_over_n'), '.4g')} "
              f"| {a.get('dropped', '–')} → {b.get('dropped', '–')} "
              f"| {fmt(a.get('power_alpha'), 'g')} → {fmt(b.get('power_alpha'), 'g')} "
              f"| {a.get('sweeps', '–')} → {b.get('sweeps', '–')} "
              f"| {fmt(a.get('cpu'), '.2f')} → {fmt(b.get('cpu'), '.2f')} |")
    print(f"\nCPU s of the cells above: A {tot['A']:.1f}, B {tot['B']:.1f}"
          f" ({tot['B'] / tot['A']:.2f}×)" if tot["A"] else "")
    bench = {}
    for r in rows:
        if r["part"] == "bench" and r.get("ep_cpu_s") is not None:
            bench.setdefault(r["cell"], {}).setdefault(r["bin"], []).append(r)
    for f, by in bench.items():
        if "A" in by and "B" in by:
            ma = statistics.median(x["ep_cpu_s"] for x in by["A"])
            mb = statistics.median(x["ep_cpu_s"] for x in by["B"])
            print(f"bench-ep {f}: EP CPU ms A {1e3 * ma:.2f} → B {1e3 * mb:.2f} ({mb / ma:.3f}×, "
                  f"{len(by['A'])}/{len(by['B'])} rounds), sweeps {by['A'][-1]['sweeps']} → "
                  f"{by['B'][-1]['sweeps']}")


if __name__ == "__main__":
    main()
