#!/usr/bin/env bash
# Runs a command against a throwaway Postgres 16 with pgvector, then stops it (even when the
# command fails or is interrupted) and deletes its data.
#
#   scripts/postgres.sh cargo test -p driftback-store
#
# Postgres comes from the PyPI wheel `pgserver` (a zip whose pgserver/pginstall/ holds Postgres 16
# and pgvector's vector.so), fetched once with `pip download` into a cache directory. The cluster
# runs as a non-root user (Postgres refuses root; when run as root the script uses, and if needed
# creates, the system user DRIFTBACK_PG_USER, default `driftback-pg`), listens on a free loopback
# port with trust authentication, and the command sees
#
#   DATABASE_URL=postgres://postgres@127.0.0.1:PORT/postgres
#
# and DRIFTBACK_TEST_PG_RESTART, a command that restarts that server (for tests of what survives one).
#
# Environment: DRIFTBACK_PG_CACHE (where the wheel is unpacked), DRIFTBACK_PG_USER,
# DRIFTBACK_PG_DURABLE=1 (keep fsync and synchronous commit on, as in production: for benchmarks).
# The command's exit status is the script's.
set -euo pipefail

if [ "$#" -eq 0 ]; then
    echo "usage: $0 COMMAND [ARGS...]   (runs COMMAND with DATABASE_URL set to a throwaway Postgres)" >&2
    exit 2
fi

PGSERVER_VERSION=0.1.4
if [ "$(id -u)" -eq 0 ]; then
    # The non-root server user must be able to reach the binaries: not under /root.
    default_cache=/var/cache/driftback
else
    default_cache="${XDG_CACHE_HOME:-$HOME/.cache}/driftback"
fi
CACHE="${DRIFTBACK_PG_CACHE:-$default_cache}/pgserver-$PGSERVER_VERSION"
PGBIN="$CACHE/pgserver/pginstall/bin"

log() { echo "postgres.sh: $*" >&2; }

fetch() {
    command -v pip >/dev/null || command -v pip3 >/dev/null || {
        log "pip is needed once to fetch Postgres (the PyPI wheel pgserver==$PGSERVER_VERSION)"
        exit 1
    }
    local pip
    pip=$(command -v pip || command -v pip3)
    local tmp
    tmp=$(mktemp -d)
    log "fetching pgserver==$PGSERVER_VERSION (Postgres 16 + pgvector) into $CACHE"
    # The binaries inside do not depend on the Python version; ask for one wheel that exists.
    "$pip" download --quiet --no-deps --only-binary=:all: --python-version 3.11 \
        --platform "manylinux2014_$(uname -m)" "pgserver==$PGSERVER_VERSION" -d "$tmp"
    mkdir -p "$CACHE.partial"
    if command -v unzip >/dev/null; then
        # pgserver.libs/ holds the shared libraries the binaries load (libpq).
        unzip -q -o "$tmp"/pgserver-*.whl 'pgserver/pginstall/*' 'pgserver.libs/*' -d "$CACHE.partial"
    else
        python3 -m zipfile -e "$tmp"/pgserver-*.whl "$CACHE.partial"
        chmod -R a+rx "$CACHE.partial/pgserver/pginstall/bin"
    fi
    rm -rf "$tmp" "$CACHE"
    mv "$CACHE.partial" "$CACHE"
    chmod -R a+rX "$CACHE"
}

[ -x "$PGBIN/postgres" ] || fetch
for tool in initdb pg_ctl postgres; do
    [ -x "$PGBIN/$tool" ] || { log "$PGBIN/$tool is missing; delete $CACHE and run again"; exit 1; }
done

as_server_user=()
RUN=$(mktemp -d "${TMPDIR:-/tmp}/driftback-pg.XXXXXX")
if [ "$(id -u)" -eq 0 ]; then
    PGUSER_OS="${DRIFTBACK_PG_USER:-driftback-pg}"
    if ! id "$PGUSER_OS" >/dev/null 2>&1; then
        log "creating the system user $PGUSER_OS to run Postgres (it refuses to run as root)"
        useradd --system --no-create-home --shell /usr/sbin/nologin "$PGUSER_OS"
    fi
    chown "$PGUSER_OS" "$RUN"
    chmod 700 "$RUN"
    as_server_user=(runuser -u "$PGUSER_OS" --)
fi

PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
DATA="$RUN/data"
LOGFILE="$RUN/postgres.log"

stop() {
    local status=$?
    if [ -f "$DATA/postmaster.pid" ]; then
        "${as_server_user[@]}" "$PGBIN/pg_ctl" stop -D "$DATA" -m fast -w >/dev/null 2>&1 ||
            log "could not stop Postgres cleanly (data in $RUN)"
    fi
    rm -rf "$RUN"
    exit "$status"
}
trap stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

"${as_server_user[@]}" "$PGBIN/initdb" -D "$DATA" -U postgres --auth=trust --encoding=UTF8 --no-locale \
    >"$RUN/initdb.log" 2>&1 || { cat "$RUN/initdb.log" >&2; log "initdb failed"; exit 1; }
# Tests open many short-lived databases and pools; fsync off is for throwaway test data only.
durability="-c fsync=off -c synchronous_commit=off"
[ "${DRIFTBACK_PG_DURABLE:-0}" = 1 ] && durability=""
"${as_server_user[@]}" "$PGBIN/pg_ctl" start -D "$DATA" -l "$LOGFILE" -w -t 60 \
    -o "-h 127.0.0.1 -p $PORT -k $RUN -c max_connections=300 $durability" \
    >/dev/null || { cat "$LOGFILE" >&2; log "Postgres did not start"; exit 1; }

# A restart of this server (same port and options), for tests of what survives one.
cat >"$RUN/restart" <<RESTART
#!/usr/bin/env bash
# restart [OUTAGE_SECS]: stop the server, stay down that long (default 0), start it again.
set -e
${as_server_user[*]} "$PGBIN/pg_ctl" stop -D "$DATA" -m fast -w >/dev/null
sleep "\${1:-0}"
${as_server_user[*]} "$PGBIN/pg_ctl" start -D "$DATA" -l "$LOGFILE" -w -t 60 \\
    -o "-h 127.0.0.1 -p $PORT -k $RUN -c max_connections=300 $durability" >/dev/null
RESTART
chmod 755 "$RUN/restart"
export DRIFTBACK_TEST_PG_RESTART="$RUN/restart"
export DATABASE_URL="postgres://postgres@127.0.0.1:$PORT/postgres"
log "Postgres 16 with pgvector on 127.0.0.1:$PORT (DATABASE_URL=$DATABASE_URL)"
status=0
"$@" || status=$?
exit "$status"
