#!/usr/bin/env python3
"""Validate docker-compose.yml and deploy/kubernetes/*.yaml against their schemas (run through
scripts/check-deploy.sh, which provides the checkers). Exits non-zero naming each problem."""

import argparse
import glob
import json
import os
import sys

import jsonschema
import kubernetes_validate
import yaml

KUBERNETES_VERSION = "1.34.0"


def check_compose(path, schema_path):
    with open(schema_path) as f:
        schema = json.load(f)
    with open(path) as f:
        document = yaml.safe_load(f)
    validator = jsonschema.Draft201909Validator(schema)
    return [f"{path}: {'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}"
            for e in validator.iter_errors(document)]


def check_kubernetes(directory):
    problems = []
    files = sorted(glob.glob(os.path.join(directory, "*.yaml")))
    for path in files:
        if os.path.basename(path) == "kustomization.yaml":
            continue
        with open(path) as f:
            documents = [d for d in yaml.safe_load_all(f) if d]
        for document in documents:
            try:
                kubernetes_validate.validate(document, KUBERNETES_VERSION, strict=True)
            except kubernetes_validate.ValidationError as e:
                problems.append(f"{path}: {document.get('kind')}: {e.message} at {'/'.join(map(str, e.path))}")
            except Exception as e:  # an unknown kind or version: a problem too
                problems.append(f"{path}: {document.get('kind')}: {e}")
    return problems, len(files)


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--compose-schema", required=True)
    p.add_argument("--compose", default="docker-compose.yml")
    p.add_argument("--kubernetes", default="deploy/kubernetes")
    args = p.parse_args()
    problems = check_compose(args.compose, args.compose_schema)
    k8s, count = check_kubernetes(args.kubernetes)
    problems += k8s
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        sys.exit(f"check-deploy: {len(problems)} problem(s)")
    print(f"check-deploy: {args.compose} fits the Compose specification; "
          f"{count - 1} Kubernetes manifests fit the API schemas of {KUBERNETES_VERSION} (strict)")


if __name__ == "__main__":
    main()
