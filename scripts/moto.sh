#!/usr/bin/env bash
# Run a command next to moto's AWS server (SQS, EventBridge) on a free loopback port.
#
#   scripts/moto.sh COMMAND [ARGS...]
#
# Installs `moto[server]` into a cached virtual environment on first use
# (${DRIFTBACK_CACHE:-~/.cache/driftback}/moto-venv), starts `moto_server -H 127.0.0.1 -p PORT`,
# exports DRIFTBACK_TEST_MOTO_ENDPOINT=http://127.0.0.1:PORT (and dummy AWS credentials and region, which
# moto accepts), runs the command, and stops the server when the command ends, whatever its outcome.
# The command's exit status is the script's.
set -euo pipefail
if [ "$#" -eq 0 ]; then
  echo "usage: scripts/moto.sh COMMAND [ARGS...]" >&2
  exit 2
fi
cache="${DRIFTBACK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/driftback}"
venv="$cache/moto-venv"
moto_version="${DRIFTBACK_MOTO_VERSION:-5.2.*}"
if [ ! -x "$venv/bin/moto_server" ]; then
  command -v python3 >/dev/null || { echo "scripts/moto.sh: python3 is required to run moto" >&2; exit 1; }
  echo "scripts/moto.sh: installing moto[server] into $venv (once)" >&2
  mkdir -p "$cache"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "moto[server]==$moto_version"
fi

port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')"
log="$(mktemp -t driftback-moto.XXXXXX.log)"
"$venv/bin/moto_server" -H 127.0.0.1 -p "$port" >"$log" 2>&1 &
moto_pid=$!
stop() {
  kill "$moto_pid" 2>/dev/null || true
  wait "$moto_pid" 2>/dev/null || true
  rm -f "$log"
}
trap stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

endpoint="http://127.0.0.1:$port"
for _ in $(seq 1 100); do
  if python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=1)' \
      "$endpoint/moto-api/" 2>/dev/null; then
    break
  fi
  if ! kill -0 "$moto_pid" 2>/dev/null; then
    echo "scripts/moto.sh: moto_server exited; its log:" >&2
    cat "$log" >&2
    exit 1
  fi
  sleep 0.1
done

export DRIFTBACK_TEST_MOTO_ENDPOINT="$endpoint"
export AWS_ACCESS_KEY_ID="${AWS_ACCESS_KEY_ID:-testing}"
export AWS_SECRET_ACCESS_KEY="${AWS_SECRET_ACCESS_KEY:-testing}"
export AWS_REGION="${AWS_REGION:-us-east-1}"
echo "scripts/moto.sh: moto on $endpoint (pid $moto_pid)" >&2
"$@"
