"""Logit coefficients of pacauc against scikit-learn's on the same file.

    python3 docs/logit_sklearn.py DATA.csv RECORD.json

RECORD.json: `pacauc fit DATA.csv --test DATA.csv --method logit --lambda L --out RECORD.json`
(training on every row; coefficients on features standardised with the population sd, as
sklearn's StandardScaler). pacauc's λ multiplies ½‖β‖² beside the summed log-loss, so
sklearn's C = 1/λ. Prints the largest |Δβ| and |Δβ| relative to max |β|.
"""
import json
import sys
import time

import numpy as np
import pandas as pd
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

data, record = sys.argv[1], sys.argv[2]
rec = json.load(open(record))
lam = rec["details"]["lambda"] if "details" in rec else rec["fit"]["details"]["lambda"]
coef = {c["name"]: c["mean"] for c in rec["coefficients"]}
df = pd.read_csv(data)
y = df.iloc[:, -1].to_numpy()
x = StandardScaler().fit_transform(df.iloc[:, :-1].to_numpy(dtype=float))
t0 = time.process_time()
m = LogisticRegression(C=1.0 / lam, tol=1e-10, max_iter=10_000).fit(x, y)
cpu = time.process_time() - t0
ours = np.array([coef[c] for c in df.columns[:-1]])
diff = np.abs(ours - m.coef_[0])
print(f"λ = {lam}, n = {len(y)}, d = {x.shape[1]}: sklearn lbfgs {cpu:.2f} CPU s; "
      f"max |Δβ| = {diff.max():.2e} (relative {diff.max() / np.abs(m.coef_[0]).max():.2e}); "
      f"intercept {rec['details']['intercept'] if 'details' in rec else ''} vs {m.intercept_[0]:.6f}")
