#!/usr/bin/env bash
# Every test of the project, as CI runs it: formatting, lints, then the whole test suite.
# Needs a Rust toolchain, git and python3 (moto's SQS/EventBridge server, started on loopback by
# scripts/moto.sh for the duration of the tests and stopped after them).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v git >/dev/null || { echo "git is required by the tests" >&2; exit 1; }
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -j 2 -- -D warnings
DRIFTBACK_REQUIRE_SERVICES=1 scripts/moto.sh cargo test --workspace -j 2
