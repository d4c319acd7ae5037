"""A fitted estimator's posterior as an ArviZ InferenceData.

The posterior is the record's kept draws (`model.votes.theta`: at most 1000
draws, thinned systematically in order from the sampler's cloud, rounded to
f32): SMC's independent runs (`runs` ≥ 2) and the great-circle sampler's
chains are the `chain` dimension — the thinning keeps the runs' and chains'
order, so each chain is a contiguous block of the kept draws (cut to equal
lengths). Gaussian approximations (EP, VB) and the baselines keep no draws:
their posterior is 1000 seeded draws from the record's Gaussian (the full
covariance where the record stores it, else the marginal sds) — a
description of that Gaussian, not samples of the Gibbs posterior.

An SMC run's particles are exchangeable but stored in ancestor order, so
they are shuffled (seeded) within each run before ArviZ splits chains in
halves; a gcs chain keeps its time order.

`sample_stats` holds each kept draw's class cut (`threshold`). Extra groups:
`smc_stages` (γ, ESS/N, acceptance, moves, log Z, mean risk per stage and
run), `ep_sweeps` (Δ, η, log Z per sweep), `gcs_batches` (R-hat, ESS per
batch). `attrs` carry the method, log evidence and the bound.
"""

import warnings

import numpy as np


def _chains(est):
    r = est.record_
    runs = r.get("runs")
    if r["method"] == "smc" and runs:
        return int(runs["count"])
    if r["method"] == "gcs":
        return int(r["spec"]["method"].get("chains", 1))
    return 1


def _gaussian_draws(est, n=1000, seed=0):
    mean = est.coef_
    spread = est.record_["model"].get("spread") or {}
    d = len(mean)
    rng = np.random.default_rng(seed)
    if spread.get("kind") == "covariance":
        lower = np.array(spread["lower"], dtype=float)
        cov = np.zeros((d, d))
        cov[np.tril_indices(d)] = lower
        cov = cov + np.tril(cov, -1).T
        return rng.multivariate_normal(mean, cov, size=n, method="eigh")
    return mean + rng.standard_normal((n, d)) * est.coef_sd_


def to_inference_data(est):
    import arviz as az
    import xarray as xr

    names = est.coef_names_
    chains = _chains(est)
    if est.draws_ is not None:
        draws = est.draws_
        thresholds = np.array(est.record_["model"]["votes"]["thresholds"], dtype=float)
        per = len(draws) // chains
        keep = np.concatenate(
            [np.arange(c * len(draws) // chains, c * len(draws) // chains + per) for c in range(chains)]
        )
        theta = draws[keep].reshape(chains, per, -1)
        cuts = thresholds[keep].reshape(chains, per)
        if est.record_["method"] == "smc":
            # A run's particles are exchangeable but kept in ancestor order
            # after resampling: a seeded shuffle within each run, so that
            # ArviZ's split R-hat compares halves of the cloud, not of the order.
            rng = np.random.default_rng(0)
            for c in range(chains):
                order = rng.permutation(per)
                theta[c] = theta[c][order]
                cuts[c] = cuts[c][order]
        stats = {"threshold": cuts}
        source = "the record's kept posterior draws"
    else:
        theta = _gaussian_draws(est)[None, :, :]
        stats = {}
        source = "draws from the record's Gaussian approximation"
    coords = {"feature": names}
    posterior = xr.Dataset(
        {"theta": (("chain", "draw", "feature"), theta)},
        coords={"chain": np.arange(theta.shape[0]), "draw": np.arange(theta.shape[1]), **coords},
    )
    groups = {"posterior": posterior}
    if stats:
        groups["sample_stats"] = xr.Dataset(
            {k: (("chain", "draw"), v) for k, v in stats.items()},
            coords={"chain": posterior.chain, "draw": posterior.draw},
        )
    groups.update(_trace_groups(est.record_["trace"]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # extra groups are not ArviZ's standard ones
        idata = az.InferenceData(**groups)
    r = est.record_
    attrs = {
        "method": r["method"],
        "source": source,
        "log_evidence": r.get("log_evidence") if r.get("log_evidence") is not None else np.nan,
        "gamma": r.get("gamma") if r.get("gamma") is not None else np.nan,
        "converged": int(r["converged"]),
    }
    bound = r.get("bound")
    if isinstance(bound, dict) and isinstance(bound.get("risk"), (int, float)):
        attrs["bound_risk"] = bound["risk"]
    idata.posterior.attrs.update(attrs)
    return idata


def _trace_groups(trace):
    import xarray as xr

    out = {}
    stages = [e for e in trace if e.get("event") == "smc_stage"]
    if stages:
        run, runs = 1, []
        # Each stage's run: the SmcRun markers before it.
        current = 1
        for e in trace:
            if e.get("event") == "smc_run":
                current = e["run"]
            elif e.get("event") == "smc_stage":
                runs.append(current)
        keys = ["stage", "gamma", "ess_frac", "acceptance", "moves", "log_z", "mean_risk"]
        out["smc_stages"] = xr.Dataset(
            {k: ("row", np.array([_f(s.get(k)) for s in stages])) for k in keys}
            | {"run": ("row", np.array(runs))}
        )
        del run
    sweeps = [e for e in trace if e.get("event") == "ep_sweep"]
    if sweeps:
        keys = ["sweep", "delta", "eta", "log_z", "negative_share"]
        out["ep_sweeps"] = xr.Dataset(
            {k: ("row", np.array([_f(s.get(k)) for s in sweeps])) for k in keys}
        )
    batches = [e for e in trace if e.get("event") == "gcs_batch"]
    if batches:
        keys = ["batch", "steps", "draws", "rhat", "ess_bulk", "ess_tail"]
        out["gcs_batches"] = xr.Dataset(
            {k: ("row", np.array([_f(s.get(k)) for s in batches])) for k in keys}
        )
    return out


def _f(v):
    return np.nan if v is None else float(v)
