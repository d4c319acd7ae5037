"""SMC runs made apart and merged; the posterior in ArviZ."""

import json
import subprocess
import sys
import pathlib

import numpy as np
import pytest

import pacauc
from conftest import without_timings

SPEC = ["--method", "smc", "--particles", "600", "--runs", "3", "--seed", "4"]
SETTINGS = dict(particles=600, runs=3, seed=4)


def test_three_processes_merge_to_the_cli_runs_record(cli, pima, tmp_path):
    paths = []
    for r in (1, 2, 3):
        out = tmp_path / f"run{r}.json"
        code = (
            "import pacauc, sys; "
            f"pacauc.fit_file({str(pima)!r}, method='smc', run={r}, "
            + ", ".join(f"{k}={v!r}" for k, v in SETTINGS.items())
            + f").save({str(out)!r})"
        )
        subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
        paths.append(out)
    merged = pacauc.merge(paths[::-1])
    whole = json.loads(cli("fit", pima, *SPEC).stdout)
    assert without_timings(merged.record_) == without_timings(whole)
    cli_merged = json.loads(cli("merge", *paths).stdout)
    assert without_timings(cli_merged) == without_timings(whole)
    assert merged.record_["runs"]["count"] == 3


def test_merge_refuses_an_incomplete_set(pima, tmp_path):
    one = pacauc.fit_file(pima, method="smc", run=1, **SETTINGS)
    two = pacauc.fit_file(pima, method="smc", run=2, **SETTINGS)
    with pytest.raises(ValueError, match="run\\(s\\) 3 missing"):
        pacauc.merge([one, two])


def test_arviz_summary_matches_the_record(pima):
    az = pytest.importorskip("arviz")
    est = pacauc.fit_file(pima, method="smc", **SETTINGS)
    idata = est.to_inference_data()
    assert dict(idata.posterior.sizes)["chain"] == 3
    assert "smc_stages" in idata.groups()
    summary = az.summary(idata, var_names=["theta"], kind="all")
    record = est.record_
    means = summary["mean"].to_numpy()
    sds = np.array([c["sd"] for c in record["coefficients"]])
    rec_means = np.array([c["mean"] for c in record["coefficients"]])
    # ≤ 1000 kept draws of the pooled cloud: the mean within 4 standard
    # errors of ~300 effective draws, the sd within 15%.
    assert np.all(np.abs(means - rec_means) <= 4 * sds / np.sqrt(300) + 1e-3)
    assert np.allclose(summary["sd"].to_numpy(), sds, rtol=0.15, atol=2e-3)
    # R-hat across the three runs: ArviZ's on the kept draws and the record's
    # on the whole clouds agree to 0.02 (both near 1 for runs that agree).
    rec_rhat = np.array(record["runs"]["rhat"], dtype=float)
    assert np.all(np.abs(summary["r_hat"].to_numpy() - rec_rhat) <= 0.02)
    assert idata.posterior.attrs["log_evidence"] == record["log_evidence"]


def test_arviz_for_ep_has_sweeps(toy):
    pytest.importorskip("arviz")
    X, y = toy
    est = pacauc.GibbsAUC(method="ep").fit(X, y)
    idata = est.to_inference_data()
    assert "ep_sweeps" in idata.groups()
    m = idata.posterior["theta"].mean(dim=("chain", "draw")).to_numpy()
    assert np.all(np.abs(m - est.coef_) <= 4 * est.coef_sd_ / np.sqrt(1000) + 1e-9)


def test_dask_example_on_a_local_cluster(pima):
    pytest.importorskip("dask.distributed")
    from dask.distributed import Client, LocalCluster

    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "examples"))
    import dask_merge

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        with Client(cluster) as client:
            est = dask_merge.pooled(client, str(pima), 3, **{k: v for k, v in SETTINGS.items() if k != "runs"})
    whole = pacauc.fit_file(pima, method="smc", **SETTINGS)
    assert without_timings(est.record_) == without_timings(whole.record_)
