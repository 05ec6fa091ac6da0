#!/usr/bin/env bash
# Every test of the project, as CI runs it: formatting, lints, then the whole test suite.
# Needs a Rust toolchain, git, and python3 with pip and venv (once, to fetch Postgres with pgvector
# for the store's tests, moto's SQS/EventBridge server for the feed's, and checkov, the security
# scanner the checkov_* tests check the security judgement against: scripts/postgres.sh and
# scripts/moto.sh start their servers on loopback for the test run and stop them afterwards, whatever
# the outcome; scripts/checkov.sh installs checkov into target/checkov-venv and starts nothing).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v git >/dev/null || { echo "git is required by the tests" >&2; exit 1; }
# git2's https feature links the system OpenSSL (docs/publishing.md).
if ! pkg-config --exists openssl 2>/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq && apt-get install -y -qq libssl-dev pkg-config >/dev/null
  else
    echo "OpenSSL development files are required: install libssl-dev and pkg-config" >&2; exit 1
  fi
fi
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -j 2 -- -D warnings
scripts/check-deploy.sh
DRIFTBACK_REQUIRE_SERVICES=1 scripts/postgres.sh scripts/moto.sh scripts/checkov.sh cargo test --workspace -j 2
