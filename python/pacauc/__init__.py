"""pacauc from Python: PAC-Bayesian AUC scoring (Gibbs posteriors by SMC, EP,
VB and great-circle sampling; logit and RankBoost baselines) as scikit-learn
estimators over the same spec, engine and run records as the `pacauc` CLI.

    from pacauc import GibbsAUC
    est = GibbsAUC(method="ep", gamma="2n").fit(X, y)
    est.decision_function(X_new); est.save("run.json")   # pacauc predict run.json new.csv
"""

import os as _os

# The matrix products' thread pool (matrixmultiply's) is process-wide and
# does not survive `fork`: a child forked after a threaded product deadlocks
# in its next one. One product thread by default makes pacauc fork-safe (the
# rayon pool of `n_jobs` threads is made per call); set MATMUL_NUM_THREADS
# before importing pacauc for threaded products, and then use multiprocessing's
# 'spawn' or 'forkserver' start method (a forked child refuses to run).
_os.environ.setdefault("MATMUL_NUM_THREADS", "1")
_THREADED_PRODUCTS = _os.environ["MATMUL_NUM_THREADS"].strip() not in ("", "0", "1")

from . import _native  # noqa: E402
from . import _estimator as _est  # noqa: E402
from ._estimator import GibbsAUC, PacaucWarning, REGISTRY, from_record

if _THREADED_PRODUCTS and hasattr(_os, "register_at_fork"):
    _os.register_at_fork(after_in_child=_est.forked)

__all__ = ["GibbsAUC", "PacaucWarning", "load", "loads", "fit_file", "merge", "settings"]
__version__ = _native.__version__


def load(path):
    """The fitted estimator of a run record (`pacauc fit --out`, the explorer's
    `e`, or `GibbsAUC.save`)."""
    with open(path, encoding="utf-8") as f:
        return loads(f.read())


def loads(text):
    """The fitted estimator of a run record given as JSON text."""
    return from_record(_native.Record.from_json(text))


def fit_file(path, method="ep", *, n_jobs=None, progress=None, **settings):
    """Fits on a CSV file exactly as `pacauc fit PATH --method METHOD …` does
    (the same record, the registry's defaults: a 25% test split unless
    `test_frac` says otherwise); returns the fitted estimator."""
    settings.setdefault("test_frac", None)
    est = GibbsAUC(method=method, n_jobs=n_jobs, progress=progress, **settings)
    _est.check_not_forked()
    record = _native.fit_file(
        str(path), str(method), est._given(), n_jobs, est._progress_callback()
    )
    fitted = from_record(record)
    fitted.set_params(n_jobs=n_jobs, progress=progress)
    fitted._set_record(record, announce=True)
    return fitted


def merge(runs):
    """Pools SMC runs made apart — `GibbsAUC(method="smc", runs=R, run=r)` fits,
    `pacauc fit --runs R --run r` records, in other processes or on other
    machines — into the estimator `runs=R` fits in one process (the same
    record: R-hat across runs, log Z mean ± sd, the pooled cloud). `runs`:
    fitted estimators, record paths, or record JSON texts, in any order. The
    data are read again from the spec's file, so the runs must have been
    fitted on a file (`pacauc.fit_file`, or the CLI)."""
    texts, names = [], []
    for i, r in enumerate(runs):
        if hasattr(r, "to_json"):
            texts.append(r.to_json())
            names.append(f"run record {i + 1}")
        elif isinstance(r, str) and r.lstrip().startswith("{"):
            texts.append(r)
            names.append(f"run record {i + 1}")
        else:
            with open(r, encoding="utf-8") as f:
                texts.append(f.read())
            names.append(str(r))
    _est.check_not_forked()
    record = _native.merge(texts, names)
    est = from_record(record)
    est._set_record(record, announce=True)
    return est


def settings():
    """The method registry: every setting's key, help, default and the methods
    it applies to (the keywords of GibbsAUC)."""
    return REGISTRY
