#!/usr/bin/env bash
# Every test of the project, as CI runs it: formatting, lints, then the whole test suite.
# Needs a Rust toolchain, git, and pip (once, to fetch Postgres with pgvector for the store's tests:
# scripts/postgres.sh starts it for the test run and stops it afterwards, whatever the outcome).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v git >/dev/null || { echo "git is required by the tests" >&2; exit 1; }
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -j 2 -- -D warnings
scripts/postgres.sh cargo test --workspace -j 2
