"""GibbsAUC against the CLI: the same records, scores and messages."""

import csv
import io
import json
import pickle
import threading
import warnings

import numpy as np
import pytest

import pacauc
from pacauc import GibbsAUC, PacaucWarning

from conftest import without_timings


def cli_record(cli, *args):
    return json.loads(cli("fit", *args).stdout)


def strip_source(r):
    """A record without what names its source (a file, or a table from Python)."""
    r = without_timings(r)
    for k in ("path", "fingerprint"):
        r["dataset"].pop(k)
    r["spec"]["data"].pop("path")
    return r


def test_fit_file_gives_the_cli_record(cli, pima):
    est = pacauc.fit_file(pima, method="ep", seed=3, gamma="2n")
    ours = without_timings(est.record_)
    theirs = without_timings(cli_record(cli, pima, "--method", "ep", "--seed", 3, "--gamma", "2n"))
    assert ours == theirs


def test_dataframe_fit_gives_the_cli_record_but_its_source(cli, pima):
    pd = pytest.importorskip("pandas")
    df = pd.read_csv(pima, float_precision="round_trip")
    X, y = df.drop(columns="y"), df["y"]
    est = GibbsAUC(method="ep", seed=3, test_frac=0.25).fit(X, y)
    theirs = cli_record(cli, pima, "--method", "ep", "--seed", 3, "--test-frac", 0.25)
    assert strip_source(est.record_) == strip_source(theirs)
    assert est.coef_names_ == list(X.columns)
    assert est.record_["dataset"]["path"] == "<DataFrame>"


def test_saved_record_scores_as_pacauc_predict(cli, pima, tmp_path):
    pd = pytest.importorskip("pandas")
    df = pd.read_csv(pima, float_precision="round_trip")
    X, y = df.drop(columns="y"), df["y"]
    est = GibbsAUC(method="smc", particles=1000, seed=1).fit(X, y)
    path = tmp_path / "run.json"
    est.save(path)
    out = cli("predict", path, pima).stdout
    rows = list(csv.DictReader(io.StringIO(out)))
    cli_scores = np.array([float(r["score"]) for r in rows])
    assert np.array_equal(cli_scores, est.score_samples(X))  # bit for bit
    assert np.array_equal(np.array([float(r["vote"]) for r in rows]), est.vote_share(X))
    back = pacauc.load(path)
    assert np.array_equal(back.score_samples(X), est.score_samples(X))
    assert list(back.classes_) == [0, 1]
    assert np.array_equal(back.predict(X), est.predict(X))


def test_pickle_goes_through_the_record(toy):
    X, y = toy
    est = GibbsAUC(method="vb", seed=2).fit(X, y)
    back = pickle.loads(pickle.dumps(est))
    assert back.record_ == est.record_
    assert np.array_equal(back.decision_function(X), est.decision_function(X))
    assert back.get_params() == est.get_params()


def test_predict_is_the_sign_of_the_decision_and_calls_the_training_share(toy):
    X, y = toy
    est = GibbsAUC(method="ep").fit(X, y)
    d = est.decision_function(X)
    assert np.array_equal(est.predict(X), np.where(d > 0, 1, 0))
    # The cut calls the training share of positives positive (no ties here).
    assert (d > 0).sum() == y.sum()
    assert 0.5 < est.score(X, y) <= 1


def test_string_labels_take_the_greater_as_positive(toy):
    X, y = toy
    labels = np.where(y == 1, "yes", "no")  # 'yes' > 'no' but may be the rarer
    est = GibbsAUC(method="logit").fit(X, labels)
    assert list(est.classes_) == ["no", "yes"]
    assert est.record_["dataset"]["positive_label"] == "yes"
    assert set(est.predict(X)) <= {"no", "yes"}


def test_settings_are_checked_by_the_library(toy):
    X, y = toy
    with pytest.raises(ValueError, match="ess does not apply to ep"):
        GibbsAUC(method="ep", ess=0.5).fit(X, y)
    with pytest.raises(ValueError, match="gamma must be a number > 0"):
        GibbsAUC(method="ep", gamma=-1).fit(X, y)
    with pytest.raises(ValueError, match="must be one of"):
        GibbsAUC(method="nope").fit(X, y)
    assert GibbsAUC(method="smc", runs=3, run=2).spec()["method"]["run"] == 2
    with pytest.raises(ValueError, match="run"):
        GibbsAUC(method="smc", run=2).spec()


def test_every_registry_setting_is_a_keyword():
    params = GibbsAUC().get_params()
    for s in pacauc.settings()["settings"]:
        key = "lambda_" if s["key"] == "lambda" else s["key"]
        assert key in params, key


def test_warnings_are_python_warnings(toy):
    X, y = toy
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = GibbsAUC(method="ep").fit(X[:40], y[:40])
    codes = {w["code"] for w in est.warnings_}
    assert codes, "a 40-row fit has a vacuous certificate"
    raised = [str(w.message) for w in caught if issubclass(w.category, PacaucWarning)]
    assert len(raised) == len(est.warnings_)


def test_thread_count_changes_no_bits(toy):
    X, y = toy
    a = GibbsAUC(method="smc", particles=500, n_jobs=1).fit(X, y)
    b = GibbsAUC(method="smc", particles=500, n_jobs=2).fit(X, y)
    ra, rb = without_timings(a.record_), without_timings(b.record_)
    ra["spec"].pop("threads"), rb["spec"].pop("threads")
    assert ra == rb


def test_four_python_threads_fit_at_once(toy):
    X, y = toy
    seeds = [11, 12, 13, 14]
    alone = {s: without_timings(GibbsAUC(method="smc", particles=400, seed=s).fit(X, y).record_) for s in seeds}
    together, errors = {}, []

    def work(s):
        try:
            together[s] = without_timings(GibbsAUC(method="smc", particles=400, seed=s).fit(X, y).record_)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(s,)) for s in seeds]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert together == alone


def test_progress_callback_sees_events_and_can_stop_the_run(toy):
    X, y = toy
    seen = []
    GibbsAUC(method="ep", progress=seen.append).fit(X, y)
    assert any(e.get("event") == "ep_sweep" for e in seen)

    def stop(e):
        raise RuntimeError("stop here")

    with pytest.raises(RuntimeError, match="stop here"):
        GibbsAUC(method="smc", particles=2000, progress=stop).fit(X, y)


def test_nan_is_refused_unless_missing_drop(toy):
    X, y = toy
    X = X.copy()
    X[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        GibbsAUC(method="logit").fit(X, y)
    est = GibbsAUC(method="logit", missing="drop").fit(X, y)
    assert est.record_["dataset"]["dropped_rows"] == 1


def test_text_columns_are_one_hot_encoded_as_from_a_file(toy):
    pd = pytest.importorskip("pandas")
    X, y = toy
    df = pd.DataFrame(X, columns=[f"f{j}" for j in range(5)])
    df["site"] = np.where(np.arange(len(df)) % 3 == 0, "north", "south")
    est = GibbsAUC(method="logit").fit(df, y)
    assert any(n.startswith("site=") for n in est.coef_names_)
    assert est.decision_function(df).shape == (len(df),)


def test_ctrl_c_cancels_a_run(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    code = (
        "import numpy as np, pacauc, sys\n"
        "rng = np.random.default_rng(0); X = rng.normal(size=(3000, 30)); y = (X[:, 0] > 0).astype(int)\n"
        "print('fitting', flush=True)\n"
        "try:\n"
        "    pacauc.GibbsAUC(method='smc', particles=200000).fit(X, y)\n"
        "except KeyboardInterrupt:\n"
        "    print('interrupted', flush=True); sys.exit(7)\n"
    )
    # A shell's background job (`cmd &`, e.g. a CI script) starts with SIGINT
    # ignored, and a Python started so installs no KeyboardInterrupt handler:
    # give the child the default disposition a terminal's Python has.
    p = subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert p.stdout.readline().strip() == "fitting"
    time.sleep(1.5)
    t0 = time.monotonic()
    p.send_signal(signal.SIGINT)
    out, _ = p.communicate(timeout=60)
    assert p.returncode == 7 and "interrupted" in out
    assert time.monotonic() - t0 < 15, "Ctrl-C returns within a second or so, whatever the engine is doing"


def _fit_in_child(seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(300, 40))
    y = (X[:, 0] + rng.normal(size=300) > 0).astype(int)
    return GibbsAUC(method="ep", is_draws=0).fit(X, y).record_["converged"]


def test_a_process_forked_after_a_fit_can_fit(toy):
    # The matrix products keep one thread by default (pacauc sets
    # MATMUL_NUM_THREADS=1 unless given): no pool for a fork to break.
    import multiprocessing as mp

    _fit_in_child(0)
    with mp.get_context("fork").Pool(1) as pool:
        assert pool.map_async(_fit_in_child, [1]).get(timeout=120) == [True]
