#!/usr/bin/env bash
# The Python package as a user installs it: a fresh venv, `pip install ./python`
# (maturin builds the bindings crate into the workspace's target/), pytest.
# Needs target/release/pacauc (the CLI the tests compare against): .ci/run
# builds it with `cargo test --release` first.
set -uo pipefail
cd "$(dirname "$0")/.."

venv="$(mktemp -d)/venv"
python3 -m venv "$venv" || { echo "python.sh: cannot create a venv (apt-get install python3-venv)"; exit 1; }
pip=("$venv/bin/pip" install --quiet --disable-pip-version-check)
"${pip[@]}" pytest numpy scikit-learn pandas || exit 1
# Optional: their tests skip without them.
timeout 600 "${pip[@]}" arviz "dask[distributed]" || echo "note: arviz/dask not installed; their tests skip"
"${pip[@]}" ./python || { echo "python.sh: pip install ./python failed"; exit 1; }
cargo build --release --bin pacauc --quiet || exit 1
PACAUC_BIN="$PWD/target/release/pacauc" "$venv/bin/python" -m pytest python/tests -q -p no:cacheprovider
rc=$?
case $rc in
  0) ;;
  5) echo "python.sh: pytest collected no tests"; exit 1 ;;
  *) echo "python.sh: pytest failed (exit $rc)"; exit "$rc" ;;
esac
