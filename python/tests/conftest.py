import os
import pathlib
import shutil
import subprocess

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATASETS = ROOT.parent / "shared" / "datasets"
if not DATASETS.is_dir():
    DATASETS = pathlib.Path("/work/shared/datasets")


def pacauc_bin():
    """The CLI built from this checkout (`cargo build --release`), or PACAUC_BIN."""
    env = os.environ.get("PACAUC_BIN")
    if env:
        return env
    built = ROOT / "target" / "release" / "pacauc"
    if built.exists():
        return str(built)
    found = shutil.which("pacauc")
    if found:
        return found
    pytest.skip("no pacauc binary: run `cargo build --release` at the root or set PACAUC_BIN")


@pytest.fixture(scope="session")
def cli():
    binary = pacauc_bin()

    def run(*args, check=True):
        p = subprocess.run([binary, *map(str, args)], capture_output=True, text=True)
        if check and p.returncode != 0:
            raise AssertionError(f"pacauc {' '.join(map(str, args))} failed: {p.stderr}")
        return p

    return run


@pytest.fixture(scope="session")
def pima():
    path = DATASETS / "pima.csv"
    if not path.exists():
        pytest.skip(f"{path} is absent")
    return path


@pytest.fixture
def toy():
    """A small linear problem: 240 rows, 5 features, the first two informative."""
    rng = np.random.default_rng(7)
    X = rng.normal(size=(240, 5))
    y = (X[:, 0] - 0.7 * X[:, 1] + 0.8 * rng.normal(size=240) > 0.3).astype(int)
    return X, y


TIMING_KEYS = {"seconds", "elapsed", "sampler_seconds", "load", "fit", "total"}


def without_timings(v, parent=""):
    """A record with every timing (seconds, elapsed) removed: what two runs of
    one spec on one machine may differ in."""
    if isinstance(v, dict):
        return {
            k: without_timings(x, k)
            for k, x in v.items()
            if not (k in ("seconds", "elapsed", "sampler_seconds") or "seconds" in k)
        }
    if isinstance(v, list):
        return [without_timings(x, parent) for x in v]
    return v
