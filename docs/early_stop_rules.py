# The early-stop rules of γ by CV along the SMC path, replayed on full-path records.
#
#   pacauc fit DATA --method smc --gamma auto --full-path --seed S --out DIR/NAME.json
#   python3 docs/early_stop_rules.py 'DIR/*.json'
#
# For each record and rule ("P points in a row past the best, each more than K paired standard
# errors below it", the rule of src/engine/select/path.rs): the grid point after which the folds'
# paths would end, the γ/n it would choose ('!' when that differs from the full curve's choice),
# and the CV's cost as a share of refitting at every grid point, in risk evaluations (a refit to
# γ_k costs about what the path pays to reach γ_k, so refitting costs Σ_k of them).
import glob
import json
import math
import sys

RULES = [(3, 1.0), (2, 1.0), (2, 1.5), (2, 2.0), (1, 2.0)]
TIE = 1e-9


def best_up_to(mean, last):
    best = 0
    for j in range(1, last + 1):
        if mean[j] > mean[best] + TIE:
            best = j
    return best


def stop_after(fold_auc, mean, points, ses):
    k, top = len(fold_auc), len(mean) - 1
    for at in range(top):
        best = best_up_to(mean, at)
        after = list(range(best + 1, at + 1))
        if len(after) < points:
            continue

        def below(j):
            d = [f[j] - f[best] for f in fold_auc]
            m = sum(d) / k
            sd = math.sqrt(sum((x - m) ** 2 for x in d) / (k - 1))
            return m < 0 and m < -ses * sd / math.sqrt(k)

        if all(below(j) for j in after[-points:]):
            return at
    return top


def main(pattern):
    head = " | ".join(f"{p} pt > {s} SE: stop/choice/cost" for p, s in RULES)
    print(f"| record | full-curve choice | {head} |")
    for fn in sorted(glob.glob(pattern)):
        det = json.load(open(fn))["details"]
        fold_auc, grid = det["cv"]["fold_auc"], det["cv"]["grid"]
        k = len(fold_auc)
        mean = [sum(f[j] for f in fold_auc) / k for j in range(len(grid))]
        full = best_up_to(mean, len(grid) - 1)
        evals = {(r["fold"], r["gamma_over_n"]): r["evaluations"] for r in det["cv_runs"]}
        to_point = [sum(evals[(f + 1, g)] for f in range(k)) for g in grid]
        refit = sum(to_point)
        cells = []
        for points, ses in RULES:
            s = stop_after(fold_auc, mean, points, ses)
            ch = best_up_to(mean, s)
            mark = "" if ch == full else "!"
            cells.append(f"{grid[s]}/{grid[ch]}{mark}/{to_point[s] / refit:.2f}")
        print(f"| {fn.split('/')[-1]} | {grid[full]} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "records/*.json")
