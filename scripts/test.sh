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
# The SSH tests run a loopback sshd (publish deploy keys, module sources over ssh, serve with a key).
if ! command -v ssh-keygen >/dev/null || { ! command -v sshd >/dev/null && [ ! -x /usr/sbin/sshd ]; }; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    # Installed, not started: policy-rc.d keeps the package from starting the system's sshd.
    policy=/usr/sbin/policy-rc.d made_policy=
    if [ ! -e "$policy" ]; then
      printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod +x "$policy" && made_policy=1
      trap 'rm -f /usr/sbin/policy-rc.d' EXIT
    fi
    apt-get update -qq && apt-get install -y -qq --no-install-recommends openssh-server openssh-client >/dev/null
    if [ -n "$made_policy" ]; then rm -f "$policy"; trap - EXIT; fi
  else
    echo "sshd and ssh-keygen are required by the SSH test: install openssh-server" >&2; exit 1
  fi
fi
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -j 2 -- -D warnings
scripts/import-cycles.py --self-test && scripts/import-cycles.py
scripts/check-deploy.sh
DRIFTBACK_REQUIRE_SERVICES=1 scripts/postgres.sh scripts/moto.sh scripts/checkov.sh cargo test --workspace -j 2
