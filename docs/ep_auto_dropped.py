#!/usr/bin/env python3
"""EP `--gamma auto`: dropped grid points per (set, prior), two binaries (issue 28).

    python3 docs/ep_auto_dropped.py A B OUT [--sets glass,pima,...] [--priors gaussian,ard,spike-slab,gp]

A and B are pacauc binaries (A: before, B: after), run one after the other per
cell under `nice -n 10 /usr/bin/time` with `--threads 1 --is-draws 0`, each in
its own folder under OUT. Every prior runs under the new driver
(`--ep-start continuation --ep-controller anderson`, spike-and-slab's coming
default; Gaussian's and ARD's default). GP-EP (`gp`) keeps its CV under details.gamma.cv, the others under
details.cv: both are read. Sets: the shared ones ($PACAUC_DATASETS,
default /work/shared/datasets) and three messy files written here (seeded, pure
Python): rare3 (2000 rows, 3% positives, 8 features), ties (600 rows, 150
distinct rows each repeated ~4×, integer features), codes (800 rows, skewed
integer codes with 99/999 sentinels), wide (40 rows × 120 features, d ≥ n).
Prints one line per cell: dropped points, γ/n, test AUC, CPU s; OUT/results.jsonl.
"""
import argparse, json, math, os, random, subprocess, sys

from ep_flip import record_cv  # docs/ is this script's folder, so first on sys.path

DATA = os.environ.get("PACAUC_DATASETS", "/work/shared/datasets")
SHARED = ["glass", "pima", "ionosphere", "sonar", "spectf", "spect", "spect_train", "credit"]
MESSY = ["rare3", "ties", "codes", "wide"]


def write_messy(folder):
    """The messy files (the same on every run)."""
    os.makedirs(folder, exist_ok=True)
    r = random.Random(19)
    rows = []
    for _ in range(2000):  # rare positives
        x = [r.gauss(0, 1) for _ in range(8)]
        s = 0.9 * x[0] - 0.6 * x[1] + 0.4 * x[2] + r.gauss(0, 1)
        rows.append(x + [1 if s > 2.6 else 0])
    save(os.path.join(folder, "rare3.csv"), rows, 8)
    base = []
    for _ in range(150):  # ties: few distinct rows, integer features
        x = [r.randint(0, 3) for _ in range(6)]
        y = 1 if x[0] + x[1] - x[2] + r.gauss(0, 1.5) > 1.5 else 0
        base.append(x + [y])
    rows = [list(b) for b in base for _ in range(r.randint(2, 6))]
    r.shuffle(rows)
    save(os.path.join(folder, "ties.csv"), rows[:600], 6)
    rows = []
    for _ in range(800):  # skewed integer codes with sentinels
        a = min(int(r.expovariate(0.3)), 60)
        b = int(math.exp(r.gauss(2, 1.2)))
        c = r.choice([1, 1, 1, 2, 2, 3, 7, 99])
        d = 999 if r.random() < 0.05 else r.randint(0, 20)
        e = r.randint(0, 1)
        s = 0.08 * a + 0.3 * math.log1p(b) - 0.5 * (c == 99) + 0.05 * min(d, 20) + r.gauss(0, 1)
        rows.append([a, b, c, d, e, 1 if s > 2.0 else 0])
    save(os.path.join(folder, "codes.csv"), rows, 5)
    rows = []
    for i in range(40):  # d >= n
        x = [r.gauss(0, 1) for _ in range(120)]
        s = x[0] + x[1] - x[2] + r.gauss(0, 1)
        rows.append(x + [1 if (s > 0) != (i % 7 == 0) else 0])
    save(os.path.join(folder, "wide.csv"), rows, 120)


def save(path, rows, d):
    with open(path, "w") as f:
        f.write(",".join([f"x{k + 1}" for k in range(d)] + ["y"]) + "\n")
        for row in rows:
            f.write(",".join(str(round(v, 4)) if isinstance(v, float) else str(v) for v in row) + "\n")


def run(exe, path, prior, folder):
    os.makedirs(folder, exist_ok=True)
    extra = {"gaussian": [], "ard": ["--prior", "ard"], "spike-slab": ["--prior", "spike-slab"],
             "gp": ["--prior", "gp"]}[prior]
    cmd = [exe, "fit", path, "--method", "ep", "--gamma", "auto", "--threads", "1", "--is-draws", "0",
           "--ep-start", "continuation", "--ep-controller", "anderson", "--out", "rec.json"] + extra
    tfile = os.path.join(folder, "time.txt")
    p = subprocess.run(["nice", "-n", "10", "/usr/bin/time", "-f", "%U %S", "-o", tfile] + cmd,
                       cwd=folder, capture_output=True, text=True)
    try:
        u, s = open(tfile).read().split()[-2:]
        cpu = float(u) + float(s)
    except (OSError, ValueError):
        cpu = float("nan")
    try:
        rec = json.load(open(os.path.join(folder, "rec.json")))
    except (OSError, ValueError):
        return {"record": False, "cpu": cpu, "rc": p.returncode, "err": p.stderr[-300:]}
    return dict(summary(rec), cpu=cpu)


def summary(rec):
    """A record's CV: dropped points, γ/n chosen, test AUC, points extended below."""
    cv = record_cv(rec)
    return {"record": True, "dropped": len(cv.get("dropped") or []),
            "over_n": cv.get("chosen"), "auc": (rec.get("auc") or {}).get("test"),
            "extended": cv.get("extended_below")}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("out")
    ap.add_argument("--sets", default=",".join(SHARED + MESSY))
    ap.add_argument("--priors", default="gaussian,ard,spike-slab")
    ap.add_argument("--only", default="", help="A or B: run one binary only")
    args = ap.parse_args()
    messy = os.path.join(args.out, "messy")
    write_messy(messy)
    res = open(os.path.join(args.out, "results.jsonl"), "a")
    for s in args.sets.split(","):
        path = os.path.join(messy if s in MESSY else DATA, s + ".csv")
        for prior in args.priors.split(","):
            line = []
            for who, exe in (("A", args.a), ("B", args.b)):
                if args.only and who != args.only:
                    continue
                r = run(os.path.abspath(exe), path, prior, os.path.join(args.out, who, s, prior))
                r.update({"set": s, "prior": prior, "bin": who})
                res.write(json.dumps(r) + "\n")
                res.flush()
                line.append(r)
            fmt = lambda r: (f"dropped {r['dropped']} γ/n {r['over_n']} AUC {r['auc']:.4f} {r['cpu']:.2f} CPU s"
                             if r["record"] else f"no record ({r.get('err', '')[-120:]!r})")
            print(f"{s:12s} {prior:10s} " + " | ".join(f"{r['bin']}: {fmt(r)}" for r in line), flush=True)


if __name__ == "__main__":
    main()
