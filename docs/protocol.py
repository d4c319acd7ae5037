#!/usr/bin/env python3
"""Replaced by `pacauc reproduce` (README: "The paper's tables end to end";
docs/PROTOCOL.md: what it runs and what changed from this script).

    cargo build --release
    target/release/pacauc reproduce [--quick] [--only pima,glass] [--methods logit,ep] [--splits K]
"""
import sys

print(__doc__.strip(), file=sys.stderr)
sys.exit(2)
