#!/usr/bin/env bash
# Runs a command with checkov, the Terraform security scanner the tests use as an independent
# oracle of driftback's security judgement (crates/driftback/tests/checkov_*.rs).
#
#   scripts/checkov.sh cargo test -p driftback --test checkov_pairs --test checkov_oracle
#
# Installs checkov==$DRIFTBACK_CHECKOV_VERSION (default the pinned 3.3.30) from PyPI into a virtual
# environment in the repository's work area, target/checkov-venv (DRIFTBACK_CHECKOV_VENV to put it
# elsewhere), once: a present environment with that version is reused, one with another version is
# replaced. The command sees DRIFTBACK_CHECKOV=<the checkov executable>. Nothing is started, so
# there is nothing to stop. The command's exit status is the script's.
set -euo pipefail

if [ "$#" -eq 0 ]; then
    echo "usage: $0 COMMAND [ARGS...]   (runs COMMAND with DRIFTBACK_CHECKOV set to a pinned checkov)" >&2
    exit 2
fi

log() { echo "checkov.sh: $*" >&2; }

CHECKOV_VERSION="${DRIFTBACK_CHECKOV_VERSION:-3.3.30}"
repo="$(cd "$(dirname "$0")/.." && pwd)"
VENV="${DRIFTBACK_CHECKOV_VENV:-$repo/target/checkov-venv}"
# Written last by a complete installation: the version it holds.
MARKER="$VENV/.driftback-checkov-version"

if [ ! -x "$VENV/bin/checkov" ] || [ "$(cat "$MARKER" 2>/dev/null)" != "$CHECKOV_VERSION" ]; then
    command -v python3 >/dev/null || { log "python3 (3.9 or newer, with venv and pip) is required"; exit 1; }
    log "installing checkov==$CHECKOV_VERSION from PyPI into $VENV (once; a few minutes)"
    # The marker is written last: an interrupted installation is redone, never taken for a finished one.
    rm -rf "$VENV"
    mkdir -p "$(dirname "$VENV")"
    python3 -m venv "$VENV" || {
        log "python3 -m venv failed: install the venv module (Debian: apt-get install python3-venv)"
        exit 1
    }
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
        "checkov==$CHECKOV_VERSION" || { log "pip could not install checkov==$CHECKOV_VERSION"; exit 1; }
    installed="$("$VENV/bin/checkov" --version 2>/dev/null | tail -n 1)" || installed=""
    [ "$installed" = "$CHECKOV_VERSION" ] || { log "checkov in $VENV reports version '$installed', not $CHECKOV_VERSION"; exit 1; }
    echo "$CHECKOV_VERSION" >"$MARKER"
fi

export DRIFTBACK_CHECKOV="$VENV/bin/checkov"
log "checkov $CHECKOV_VERSION at $DRIFTBACK_CHECKOV"
status=0
"$@" || status=$?
exit "$status"
