#!/usr/bin/env bash
# The local driftback stack without containers: Postgres with pgvector (scripts/postgres.sh), moto's
# SQS and EventBridge (scripts/moto.sh), a bare git remote seeded with the demo infrastructure
# repository, and `driftback serve` consuming the demo's CloudTrail records from the queue and
# pushing one branch per change set to that remote. Everything it starts is stopped when it ends.
#
#   scripts/local-stack.sh            # run until Ctrl-C, printing where to look
#   scripts/local-stack.sh --once     # stop as soon as the first branch is pushed (tests, CI)
#
# Environment: DRIFTBACK_BIN (the driftback binary; default: `cargo build --release -p driftback`),
# LOCAL_STACK_DIR (where the remote, the clone and the logs go; default: a new temporary directory),
# LOCAL_STACK_TIMEOUT_SECS (how long --once waits for a branch, default 120).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -z "${LOCAL_STACK_INNER:-}" ]; then
  export LOCAL_STACK_INNER=1
  exec scripts/postgres.sh scripts/moto.sh "$0" "$@"
fi

once=false
case "${1:-}" in
  --once) once=true ;;
  "") ;;
  *) echo "usage: scripts/local-stack.sh [--once]" >&2; exit 2 ;;
esac

bin="${DRIFTBACK_BIN:-}"
if [ -z "$bin" ]; then
  cargo build --release -p driftback >&2
  bin=target/release/driftback
fi
dir="${LOCAL_STACK_DIR:-$(mktemp -d -t driftback-local-stack.XXXXXX)}"
mkdir -p "$dir"
cache="${DRIFTBACK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/driftback}"
python="$cache/moto-venv/bin/python"   # moto's environment has boto3

queue_url="$("$python" deploy/local/seed.py --endpoint "$DRIFTBACK_TEST_MOTO_ENDPOINT" \
  --remote "$dir/remote.git" --project crates/driftback/demo/project \
  --events crates/driftback/demo/events.json | tail -n 1)"

port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')"
DRIFTBACK_FEED__QUEUE_URL="$queue_url" \
DRIFTBACK_FEED__ENDPOINT_URL="$DRIFTBACK_TEST_MOTO_ENDPOINT" \
DRIFTBACK_FEED__REGION=us-east-1 \
DRIFTBACK_FEED__WAIT_TIME_SECS=1 \
DRIFTBACK_GROUP__QUIET_WINDOW_SECS=2 \
DRIFTBACK_SERVE__REPO_URL="$dir/remote.git" \
DRIFTBACK_SERVE__WORKDIR="$dir/work" \
DRIFTBACK_SERVE__LISTEN="127.0.0.1:$port" \
DRIFTBACK_SERVE__POLL_MS=200 \
DRIFTBACK_BACKFILL__ON_START=false \
DRIFTBACK_PUBLISH__MODE=push \
DRIFTBACK_STORE__URL="$DATABASE_URL" \
DRIFTBACK_LOG="${DRIFTBACK_LOG:-info}" \
  "$bin" serve >"$dir/serve.log" 2>&1 &
serve_pid=$!
stop() {
  kill -TERM "$serve_pid" 2>/dev/null || true
  wait "$serve_pid" 2>/dev/null || true
}
trap stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

echo "local-stack: driftback serve (pid $serve_pid) on http://127.0.0.1:$port (/healthz /readyz /metrics)" >&2
echo "local-stack: queue $queue_url, remote $dir/remote.git, log $dir/serve.log" >&2

deadline=$((SECONDS + ${LOCAL_STACK_TIMEOUT_SECS:-120}))
branch=""
while [ -z "$branch" ]; do
  if ! kill -0 "$serve_pid" 2>/dev/null; then
    echo "local-stack: driftback serve exited; its log:" >&2
    cat "$dir/serve.log" >&2
    exit 1
  fi
  if [ "$SECONDS" -ge "$deadline" ]; then
    echo "local-stack: no branch after ${LOCAL_STACK_TIMEOUT_SECS:-120} s; the daemon's log:" >&2
    cat "$dir/serve.log" >&2
    exit 1
  fi
  branch="$(git --git-dir "$dir/remote.git" for-each-ref --format='%(refname:short)' 'refs/heads/driftback/*' | head -n 1)"
  [ -n "$branch" ] || sleep 0.5
done
echo "local-stack: first branch pushed: $branch" >&2
git --git-dir "$dir/remote.git" log -1 --format='%h %s' "$branch"

if [ "$once" = true ]; then
  exit 0
fi
cat >&2 <<MSG
local-stack: running until Ctrl-C. Look at:
  git --git-dir $dir/remote.git branch --list 'driftback/*'
  psql "$DATABASE_URL" -c 'SELECT id, status FROM change_sets'
  curl -s http://127.0.0.1:$port/metrics | grep driftback_
MSG
wait "$serve_pid"
