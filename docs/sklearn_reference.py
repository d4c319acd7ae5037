"""scikit-learn's logistic regression on the rows a pacauc logit record trained on.

    python3 docs/sklearn_reference.py DATA.csv RECORD.json

RECORD.json: `pacauc fit DATA.csv --test TEST.csv --method logit --out RECORD.json`
(pacauc then trains on every row of DATA.csv; a record split inside one file
is refused: its rows come from pacauc's seeded shuffle, not reproduced here).
Same standardisation (the record's scaler: training means, population sds;
checked against the data), same penalty: pacauc's λ multiplies ½‖β‖² beside
the summed log-loss, so C = 1/λ; intercept unpenalised in both. Needs
scikit-learn and pyarrow. Prints one line starting REFERENCE: max |Δβ|
relative to ‖β‖ (sklearn's), the intercepts, both test AUCs, sklearn's CPU s.
"""
import json
import os
import sys
import time

import numpy as np
import pyarrow.csv as pv
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score


def read(path, features, target, positive):
    t = pv.read_csv(path)
    x = np.column_stack([t.column(f).to_numpy().astype(float) for f in features])
    y = np.array([str(v) == positive for v in t.column(target).to_pylist()])
    return x, y


def main():
    data, record = sys.argv[1], sys.argv[2]
    rec = json.load(open(record))
    split = rec["split"]
    if not split.get("test_file"):
        sys.exit("the record split its file itself: make it with --test TEST.csv so that "
                 "it trains on every row of DATA.csv")
    test = split["test_file"]
    if not os.path.isabs(test):
        test = os.path.join(os.path.dirname(os.path.abspath(data)), os.path.basename(test))
    m = rec["model"]
    features = m["features"]
    if any(r["kind"] != "numeric" for r in m["schema"]["rules"]):
        sys.exit("only numeric features are compared")
    target, positive = m["schema"]["target"], str(m["schema"]["positive_label"])
    lam = rec["details"]["lambda"]
    x, y = read(data, features, target, positive)
    if len(y) != split["train_rows"]:
        sys.exit(f"{len(y)} rows in {data}, the record trained on {split['train_rows']}")
    mean, sd = np.array(m["scaler"]["mean"]), np.array(m["scaler"]["sd"])
    scaler_err = max(np.abs(x.mean(0) - mean).max(), np.abs(x.std(0) - sd).max())
    z = (x - mean) / sd
    t0 = time.process_time()
    sk = LogisticRegression(C=1.0 / lam, tol=1e-10, max_iter=10_000).fit(z, y)
    cpu = time.process_time() - t0
    ours = np.array([{c["name"]: c["mean"] for c in rec["coefficients"]}[f] for f in features])
    theirs = sk.coef_[0]
    rel = np.abs(ours - theirs).max() / np.linalg.norm(theirs)
    xt, yt = read(test, features, target, positive)
    auc_sk = roc_auc_score(yt, ((xt - mean) / sd) @ theirs)
    print(f"REFERENCE sklearn lbfgs (C = 1/λ, {len(y)} rows): max |Δβ|/‖β‖ {rel:.1e}, "
          f"intercept {rec['details']['intercept']:.6f} vs {sk.intercept_[0]:.6f}; "
          f"test AUC {rec['auc']['test']:.6f} vs sklearn {auc_sk:.6f}; "
          f"sklearn {cpu:.1f} CPU s; scaler agrees to {scaler_err:.1e}")


if __name__ == "__main__":
    main()
