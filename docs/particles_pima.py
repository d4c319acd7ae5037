"""The fixed Pima benchmark in `particles` (Chopin's Python package, 0.4): the SMC alone.

    python3 docs/particles_pima.py TRAIN.csv [REPEAT] [SEED]

Same model as `pacauc bench TRAIN.csv --test TEST.csv --method smc --particles 10000
--waste-free 10`: the linear score on the features standardised with the training mean and
sd (ddof = 0), no intercept, the AUC Gibbs posterior π(θ) ∝ N(θ; 0, I)·exp(−γ R_n(θ)), R_n the
share of discordant positive/negative pairs (ties ½), γ = n (399 rows). `particles`' own
waste-free SMC: adaptive tempering at ESS 0.5, 1000 resampled ancestors × chains of 10 (a cloud
of 10 000), its default random-walk Metropolis on the particles' covariance (2.38/√d).
Prints, per run, the CPU seconds (process time) and wall seconds of `SMC.run()`, the stages,
risk evaluations, log Z and the posterior means; then the best and median CPU seconds.
"""
import statistics
import sys
import time

import numpy as np
from particles import SMC
from particles import distributions as dists
from particles import smc_samplers as ssp
from scipy.stats import rankdata

train = sys.argv[1]
repeat = int(sys.argv[2]) if len(sys.argv) > 2 else 5
seed = int(sys.argv[3]) if len(sys.argv) > 3 else 1

raw = np.loadtxt(train, delimiter=",", skiprows=1)
y = raw[:, -1] == 1
x = raw[:, :-1]
sd = x.std(axis=0)
x = (x[:, sd > 0] - x[:, sd > 0].mean(axis=0)) / sd[sd > 0]
n, d = x.shape
gamma = float(n)
n_pos, n_neg = int(y.sum()), int((~y).sum())
evaluations = 0


def risk(beta):
    """R_n of every row of beta (N × d): 1 − AUC by average ranks (ties ½)."""
    global evaluations
    evaluations += beta.shape[0]
    s = beta @ x.T
    ranks = rankdata(s, axis=1, method="average")
    auc = (ranks[:, y].sum(axis=1) - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)
    return 1.0 - auc


class AucGibbs(ssp.StaticModel):
    def loglik(self, theta, t=None):
        return -gamma * risk(theta["beta"])


prior = dists.StructDist({"beta": dists.MvNormal(loc=np.zeros(d), cov=np.eye(d))})
model = AucGibbs(data=None, prior=prior)
cpu, wall = [], []
for r in range(repeat):
    np.random.seed(seed + r)
    evaluations = 0
    fk = ssp.AdaptiveTempering(model=model, wastefree=True, len_chain=10, ESSrmin=0.5)
    alg = SMC(fk=fk, N=1000, verbose=False)
    t, c = time.perf_counter(), time.process_time()
    alg.run()
    cpu.append(time.process_time() - c)
    wall.append(time.perf_counter() - t)
    mean = np.average(alg.X.theta["beta"], weights=alg.W, axis=0)
    print(
        f"run {r + 1}: {cpu[-1]:.3f} CPU s, {wall[-1]:.3f} s wall; {alg.t - 1} stages, "
        f"{evaluations} risk evaluations; log Z {alg.logLt:.4f}; means "
        + " ".join(f"{m:.3f}" for m in mean)
    )
print(
    f"particles SMC (n = {n}, d = {d}, γ = {gamma:g}, N = 10 000 waste-free × 10): "
    f"best {min(cpu):.3f} CPU s, median {statistics.median(cpu):.3f} CPU s over {repeat} runs"
)
