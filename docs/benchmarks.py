#!/usr/bin/env python3
"""Regenerates docs/BENCHMARKS.md: one current table, one row per measure.

    python3 docs/benchmarks.py                 # run the cheap rows, rewrite the file
    python3 docs/benchmarks.py --only ep-pima  # run these rows (comma-separated), any cost
    python3 docs/benchmarks.py --all           # run every row (hours on 2 cores)
    python3 docs/benchmarks.py --list          # the rows, their ids and costs

The rows are docs/benchmarks.toml (measure, data, command, figure). A row not
run keeps the figure, date and machine it has in the table. Timings are CPU
seconds (user + system, from /usr/bin/time; the median of `repeat` runs) and
wall seconds, with the load average stamped: on a shared machine the wall time
is not the program's. Needs the release binary (`cargo build --release`).
"""
import argparse, datetime, json, os, platform, re, shutil, statistics, subprocess, sys, tempfile, tomllib

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROWS = os.path.join(REPO, "docs", "benchmarks.toml")
OUT = os.path.join(REPO, "docs", "BENCHMARKS.md")
COLUMNS = ["id", "measure", "data", "command", "figure", "machine", "date"]


def machine():
    model = "unknown CPU"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = os.getloadavg()[0]
    return f"{os.cpu_count()} cores {model}, load {load:.1f}"


def cell(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def read_table():
    """The rows of the current file by id (empty when it is not in table form)."""
    rows = {}
    if not os.path.exists(OUT):
        return rows
    for line in open(OUT, encoding="utf-8"):
        if not line.startswith("| `"):
            continue
        parts = [p.strip().replace("\\|", "|") for p in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        if len(parts) == len(COLUMNS):
            rid = parts[0].strip("`")
            rows[rid] = dict(zip(COLUMNS, parts))
    return rows


def run_row(row, binary, datasets):
    """Runs one row; its figure (or an error) and the machine stamp."""
    repeat = int(row.get("repeat", 1))
    cpus, walls, peaks, text = [], [], [], ""
    rec = None
    for _ in range(repeat):
        work = tempfile.mkdtemp(prefix="pacauc-bench-")
        try:
            env = dict(os.environ, PACAUC=binary, D=datasets, REPO=REPO)
            timing = os.path.join(work, "time.txt")
            proc = subprocess.run(
                ["/usr/bin/time", "-f", "%e %U %S %M", "-o", timing, "bash", "-c",
                 "set -o pipefail; " + row["command"]],
                cwd=work, env=env, capture_output=True, text=True)
            text = proc.stdout + proc.stderr
            if proc.returncode != 0:
                raise RuntimeError(f"exit {proc.returncode}: {text[-800:]}")
            wall, user, system, peak_kb = open(timing).read().split()[-4:]
            walls.append(float(wall))
            cpus.append(float(user) + float(system))
            peaks.append(float(peak_kb) / 1024)
            path = os.path.join(work, "rec.json")
            if os.path.exists(path):
                rec = json.load(open(path))
        finally:
            shutil.rmtree(work, ignore_errors=True)
    values = dict(rec=rec, cpu=statistics.median(cpus), wall=statistics.median(walls),
                  peak_mb=max(peaks))
    if "extract" in row:
        m = re.search(row["extract"], text)
        if not m:
            raise RuntimeError(f"no match for {row['extract']!r} in the output")
        values.update(m.groupdict())
        if "u" in values:
            values["plot_cpu"] = float(values["u"]) + float(values["s"])
    figure = row["figure"].format(**values)
    if repeat > 1:
        figure += f" (median of {repeat})"
    return figure


HEADER = """# Benchmarks

One row per measure: the command, its figure, the machine and the date it was
measured. **Regenerate** with `python3 docs/benchmarks.py` (the cheap rows; `--only ID,…` or
`--all` for the others, `--list` to see them): it runs each command in a fresh temporary
folder (`$PACAUC` the release binary, `$D` the shared data sets), extracts the figure and
rewrites this file. The rows are defined in [benchmarks.toml](benchmarks.toml). A row whose
date is older than the rest was carried over, with its original date and machine, from the dated
history this table replaced (2,663 lines of session logs up to 2026-11-28: `git show
29d349f:docs/BENCHMARKS.md`), and has not been re-run since.

Timings are CPU seconds (user + system; the median of the stated runs) unless wall time is
named: the project machine is 2 shared cores, so the load average is part of the stamp. The
reasoning behind the figures (why a default, what was tried and did not work) is in that history
and in the module docs of `src/engine/`; the cost model `pacauc fit` states before a run
(`src/spec/cost.rs`) takes its per-unit costs from these measures.

"""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", help="comma-separated row ids to run (whatever their cost)")
    ap.add_argument("--all", action="store_true", help="run every row")
    ap.add_argument("--list", action="store_true", help="list the rows and exit")
    ap.add_argument("--binary", default=os.path.join(REPO, "target", "release", "pacauc"))
    ap.add_argument("--datasets", default=os.environ.get("PACAUC_DATASETS", "/work/shared/datasets"))
    args = ap.parse_args()
    rows = tomllib.load(open(ROWS, "rb"))["row"]
    if args.list:
        for r in rows:
            print(f"{r['id']:<14} {'cheap' if r.get('cheap') else 'expensive':<9} {r['measure']}")
        return 0
    ids = {r["id"] for r in rows}
    only = set(args.only.split(",")) if args.only else None
    if only and only - ids:
        sys.exit(f"unknown row id(s): {', '.join(sorted(only - ids))}; see --list")
    if not os.access(args.binary, os.X_OK):
        sys.exit(f"{args.binary}: no release binary; run `cargo build --release` first")
    old = read_table()
    today = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    failed = 0
    lines = []
    for r in rows:
        run = (only is not None and r["id"] in only) or (only is None and (args.all or r.get("cheap")))
        entry = old.get(r["id"])
        if run:
            stamp = machine()
            try:
                figure = run_row(r, args.binary, args.datasets)
                entry = dict(figure=figure, machine=stamp, date=today)
                print(f"{r['id']}: {figure}", file=sys.stderr)
            except Exception as e:  # a failed row keeps its old figure, and says so
                failed += 1
                print(f"{r['id']}: FAILED: {e}", file=sys.stderr)
        if entry is None:
            c = r.get("carried")
            entry = dict(figure=c["figure"], machine=c["machine"], date=c["date"]) if c else \
                dict(figure="not measured yet", machine="–", date="–")
        lines.append("| " + " | ".join([f"`{r['id']}`", cell(r["measure"]), cell(r["data"]),
                                         "`" + cell(r["command"]) + "`", cell(entry["figure"]),
                                         cell(entry["machine"]), cell(entry["date"])]) + " |")
    body = HEADER + "| " + " | ".join(COLUMNS) + " |\n|" + "---|" * len(COLUMNS) + "\n" + "\n".join(lines) + "\n"
    tmp = OUT + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(body)
    os.replace(tmp, OUT)
    print(f"wrote {os.path.relpath(OUT)} ({len(rows)} rows; {failed} failed)", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
