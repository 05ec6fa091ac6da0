#!/usr/bin/env bash
# Every test of the project, as CI runs it: formatting, lints, then the whole test suite.
# Needs only a Rust toolchain and git; nothing is started, so nothing is left running.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v git >/dev/null || { echo "git is required by the tests" >&2; exit 1; }
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -j 2 -- -D warnings
cargo test --workspace -j 2
