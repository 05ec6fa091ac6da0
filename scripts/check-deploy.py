#!/usr/bin/env python3
"""Validate docker-compose.yml and deploy/kubernetes/**.yaml against their schemas (run through
scripts/check-deploy.sh, which provides the checkers). Kubernetes' own kinds are checked against
the API's schemas (strict: unknown fields fail); the Prometheus operator's ServiceMonitor and
PrometheusRule, which those schemas do not cover, against the subset of their CRDs these files use
(strict too). Every metric the alerts and the Grafana dashboard query must be one the code exports,
with labels the code sets, and every file a kustomization lists must exist. Exits non-zero naming
each problem."""

import argparse
import glob
import json
import os
import re
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


# The fields of the Prometheus operator's CRDs (monitoring.coreos.com/v1) these manifests may use.
_STR = {"type": "string"}
_LABELS = {"type": "object", "additionalProperties": {"type": "string"}}
_METADATA = {
    "type": "object", "additionalProperties": False, "required": ["name"],
    "properties": {"name": _STR, "namespace": _STR, "labels": _LABELS, "annotations": _LABELS},
}
_SELECTOR = {
    "type": "object", "additionalProperties": False,
    "properties": {"matchLabels": _LABELS, "matchExpressions": {"type": "array"}},
}
CRD_SCHEMAS = {
    ("monitoring.coreos.com/v1", "ServiceMonitor"): {
        "type": "object", "additionalProperties": False, "required": ["apiVersion", "kind", "metadata", "spec"],
        "properties": {
            "apiVersion": _STR, "kind": _STR, "metadata": _METADATA,
            "spec": {
                "type": "object", "additionalProperties": False, "required": ["selector", "endpoints"],
                "properties": {
                    "selector": _SELECTOR,
                    "namespaceSelector": {"type": "object", "additionalProperties": False, "properties": {
                        "any": {"type": "boolean"}, "matchNames": {"type": "array", "items": _STR}}},
                    "jobLabel": _STR,
                    "endpoints": {"type": "array", "minItems": 1, "items": {
                        "type": "object", "additionalProperties": False,
                        "properties": {"port": _STR, "targetPort": {"type": ["string", "integer"]}, "path": _STR,
                                       "scheme": {"enum": ["http", "https"]},
                                       "interval": {"type": "string", "pattern": "^[0-9]+(ms|s|m|h)$"},
                                       "scrapeTimeout": {"type": "string", "pattern": "^[0-9]+(ms|s|m|h)$"},
                                       "honorLabels": {"type": "boolean"}}}},
                },
            },
        },
    },
    ("monitoring.coreos.com/v1", "PrometheusRule"): {
        "type": "object", "additionalProperties": False, "required": ["apiVersion", "kind", "metadata", "spec"],
        "properties": {
            "apiVersion": _STR, "kind": _STR, "metadata": _METADATA,
            "spec": {
                "type": "object", "additionalProperties": False, "required": ["groups"],
                "properties": {"groups": {"type": "array", "minItems": 1, "items": {
                    "type": "object", "additionalProperties": False, "required": ["name", "rules"],
                    "properties": {
                        "name": _STR, "interval": _STR,
                        "rules": {"type": "array", "minItems": 1, "items": {
                            "type": "object", "additionalProperties": False, "required": ["expr"],
                            "oneOf": [{"required": ["alert"]}, {"required": ["record"]}],
                            "properties": {
                                "alert": _STR, "record": _STR, "expr": {"type": "string", "minLength": 1},
                                "for": {"type": "string", "pattern": "^[0-9]+(ms|s|m|h|d)$"},
                                "labels": _LABELS, "annotations": _LABELS}}},
                    }}}},
            },
        },
    },
}


def check_kubernetes(directory):
    problems = []
    files = sorted(glob.glob(os.path.join(directory, "**", "*.yaml"), recursive=True))
    checked = 0
    for path in files:
        if os.path.basename(path) == "kustomization.yaml":
            problems += check_kustomization(path)
            continue
        with open(path) as f:
            documents = [d for d in yaml.safe_load_all(f) if d]
        for document in documents:
            crd = CRD_SCHEMAS.get((document.get("apiVersion"), document.get("kind")))
            if crd is not None:
                validator = jsonschema.Draft201909Validator(crd)
                problems += [f"{path}: {document.get('kind')}: {e.message} at {'/'.join(map(str, e.absolute_path))}"
                             for e in validator.iter_errors(document)]
                checked += 1
                continue
            # A patch in an overlay is a fragment of its kind: checked against the schema with
            # what it leaves out taken from the base.
            if os.sep + "overlays" + os.sep in path:
                continue
            checked += 1
            try:
                kubernetes_validate.validate(document, KUBERNETES_VERSION, strict=True)
            except kubernetes_validate.ValidationError as e:
                problems.append(f"{path}: {document.get('kind')}: {e.message} at {'/'.join(map(str, e.path))}")
            except Exception as e:  # an unknown kind or version: a problem too
                problems.append(f"{path}: {document.get('kind')}: {e}")
    return problems, checked


def check_kustomization(path):
    """Every resource, patch and generated file a kustomization names exists."""
    base = os.path.dirname(path)
    with open(path) as f:
        k = yaml.safe_load(f)
    named = list(k.get("resources", []))
    named += [p["path"] for p in k.get("patches", []) if "path" in p]
    for generator in k.get("configMapGenerator", []) + k.get("secretGenerator", []):
        named += [entry.split("=", 1)[-1] for entry in generator.get("files", [])]
    problems = []
    for name in named:
        target = os.path.normpath(os.path.join(base, name))
        if not os.path.exists(target):
            problems.append(f"{path}: names {name}, which does not exist")
        elif os.path.isdir(target) and not os.path.exists(os.path.join(target, "kustomization.yaml")):
            problems.append(f"{path}: names the directory {name}, which has no kustomization.yaml")
        elif os.path.isfile(target) and os.path.commonpath(
                [os.path.abspath(base), os.path.abspath(target)]) != os.path.abspath(base):
            problems.append(f"{path}: names the file {name} outside its directory (kustomize refuses it); "
                            f"name a directory with a kustomization instead")
    return problems


METRIC = re.compile(r"\b(driftback_[a-z0-9_]+)")
LABEL_USE = re.compile(r"(?:by|without) \(([a-z_, ]+)\)|\{([^}]*)\}")


def exported_metrics(source_root):
    """The metric names the code defines (string literals) and the label keys it sets."""
    names, labels = set(), set()
    for path in glob.glob(os.path.join(source_root, "crates", "*", "src", "**", "*.rs"), recursive=True):
        with open(path) as f:
            text = f.read()
        names.update(re.findall(r'"(driftback_[a-z0-9_]+)"', text))
        labels.update(re.findall(r'counter!\([^;]*?"([a-z_]+)" =>', text))
        labels.update(re.findall(r'gauge!\([^;]*?"([a-z_]+)" =>', text))
        labels.update(re.findall(r'histogram!\([^;]*?"([a-z_]+)" =>', text))
    return names, labels


def check_queries(directory, source_root):
    """The metrics and labels the alerts and the dashboard query exist in the code."""
    names, labels = exported_metrics(source_root)
    labels |= {"le", "job", "instance"}
    problems, queries = [], []
    for path in sorted(glob.glob(os.path.join(directory, "**", "*.yaml"), recursive=True)):
        with open(path) as f:
            for document in yaml.safe_load_all(f):
                if document and document.get("kind") == "PrometheusRule":
                    for group in document["spec"]["groups"]:
                        queries += [(path, rule["expr"]) for rule in group["rules"]]
    for path in sorted(glob.glob(os.path.join(directory, "**", "*.json"), recursive=True)):
        with open(path) as f:
            try:
                dashboard = json.load(f)
            except json.JSONDecodeError as e:
                problems.append(f"{path}: not JSON: {e}")
                continue
        for panel in dashboard.get("panels", []):
            targets = panel.get("targets") or []
            if not targets:
                problems.append(f"{path}: panel {panel.get('title')!r} queries nothing")
            queries += [(path, t.get("expr", "")) for t in targets]
    for path, expr in queries:
        used = METRIC.findall(expr)
        if not used and "up{" not in expr:
            problems.append(f"{path}: {expr!r} queries no driftback metric")
        for metric in used:
            base = re.sub(r"_(bucket|sum|count)$", "", metric)
            if metric not in names and base not in names:
                problems.append(f"{path}: {metric} is not a metric the code exports")
        for by, selector in LABEL_USE.findall(expr):
            keys = [k.strip() for k in by.split(",")] if by else re.findall(r"([a-z_]+)\s*[=!]~?", selector)
            for key in filter(None, keys):
                if key not in labels:
                    problems.append(f"{path}: label {key!r} in {expr!r} is not one the code sets")
    return problems, len(queries)


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--compose-schema", required=True)
    p.add_argument("--compose", default="docker-compose.yml")
    p.add_argument("--kubernetes", default="deploy/kubernetes")
    args = p.parse_args()
    problems = check_compose(args.compose, args.compose_schema)
    k8s, count = check_kubernetes(args.kubernetes)
    problems += k8s
    query_problems, queries = check_queries(args.kubernetes, os.getcwd())
    problems += query_problems
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        sys.exit(f"check-deploy: {len(problems)} problem(s)")
    print(f"check-deploy: {args.compose} fits the Compose specification; "
          f"{count} Kubernetes objects fit the API schemas of {KUBERNETES_VERSION} or the Prometheus "
          f"operator's CRDs (strict); {queries} alert and dashboard queries use exported metrics and labels")


if __name__ == "__main__":
    main()
