#!/usr/bin/env python3
"""Generate crates/recipes/generated/catalog.toml: recipes for the long tail of update calls.

Sources, all machine-readable:
  - the AWS API models in the PyPI wheel `botocore` (the same release as crates/recipes/data/aws-calls.tsv):
    operations, their input shapes, member types and which members are required;
  - the AWS provider's schema (crates/terraform/data/aws-5.100.0.json.gz and aws-6.25.0.json.gz): resource
    types, attributes, their types and whether they are computed only;
  - the table of calls (crates/recipes/data/aws-calls.tsv): the event names and request member names
    CloudTrail logs;
  - the built-in catalog (crates/recipes/catalog/*.toml): pairs it covers are left to it.

    pip download --no-deps botocore==1.44.5 -d /tmp/botocore && (cd /tmp/botocore && unzip -q -o botocore-*.whl)
    python3 scripts/generate-recipes.py /tmp/botocore/botocore/data > crates/recipes/generated/catalog.toml

Only confirmed mappings are written (docs/recipes.md, "Generated recipes"):
  - the call changes something (Update*, Modify*, Put*, Set*), is logged under a name in the table of
    calls, and no built-in recipe covers it; EC2 and S3 (whose request shapes CloudTrail rewrites) are
    left to hand-written recipes;
  - its resource type is linked by name: a provider resource type of the service whose every name word
    appears in the operation's name (the most specific one; a tie links nothing), and a required request
    member that names it (`FunctionName` -> `function_name`, `TableName` -> `name` of a `..._table`);
  - a member is mapped only to an attribute of the same name (snake_case, or without the resource's own
    noun) that both supported provider versions have, that is not computed only, with a compatible type
    (string, number, bool, a map or list of strings);
  - nothing that looks like a secret (passwords, tokens, secrets, private keys) is ever mapped;
  - members left unmapped are not dropped: the planner refuses a recipe plan that leaves a member of
    the request unread (PlanError::Unmapped), so the change set goes to the agent or a person.
"""

import glob
import gzip
import json
import os
import re
import sys
import tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEMAS = ["aws-5.100.0.json.gz", "aws-6.25.0.json.gz"]
VERBS = ("Update", "Modify", "Put", "Set")
# Services whose request shapes CloudTrail logs in its own way (EC2's XML names and wrappers, S3's
# bucket sub-resources): hand-written recipes only.
SKIP_SERVICES = {"ec2", "s3", "s3control"}
# Provider resource name prefixes that differ from `aws_<service>_` (the provider's own naming).
PREFIXES = {
    "rds": ["aws_db_", "aws_rds_"],
    "elbv2": ["aws_lb_", "aws_alb_"],
    "elb": ["aws_elb_", "aws_lb_"],
    "cloudwatch": ["aws_cloudwatch_"],
    "logs": ["aws_cloudwatch_log_"],
    "events": ["aws_cloudwatch_event_"],
    "stepfunctions": ["aws_sfn_"],
    "es": ["aws_elasticsearch_"],
    "apigateway": ["aws_api_gateway_"],
    "cognito-idp": ["aws_cognito_"],
    "cognito-identity": ["aws_cognito_identity_"],
    "application-autoscaling": ["aws_appautoscaling_"],
    "elastic-inference": [],
    "directconnect": ["aws_dx_"],
    "kinesisanalyticsv2": ["aws_kinesisanalyticsv2_"],
    "servicediscovery": ["aws_service_discovery_"],
    "wafv2": ["aws_wafv2_"],
    "codestar-connections": ["aws_codestarconnections_"],
    "sso-admin": ["aws_ssoadmin_"],
    "kafka": ["aws_msk_"],
    "route53resolver": ["aws_route53_resolver_"],
    "amp": ["aws_prometheus_"],
    "ds": ["aws_directory_service_"],
    "elasticbeanstalk": ["aws_elastic_beanstalk_"],
    "kinesisvideo": ["aws_kinesis_video_"],
    "ecr-public": ["aws_ecrpublic_"],
}
# Request members that say when or how a change is applied, not what the resource is: never mapped
# to an attribute (`apply_immediately` in code would change every later apply), read and ignored.
WHEN_MEMBERS = {"ApplyImmediately", "AllowMajorVersionUpgrade"}
SECRET_WORDS = ("password", "secret", "token", "credential", "private_key", "key_material", "passphrase")
# Attributes that hold a secret under an ordinary name (the provider marks them sensitive; the schema
# data does not carry that flag): a SecureString parameter's value.
SECRET_ATTRS = {("aws_ssm_parameter", "value"), ("aws_ssm_parameter", "insecure_value")}
PLUMBING = {"ClientToken", "DryRun", "ClientRequestToken", "IdempotencyToken"}
MODEL_TYPES = {
    "string": "string",
    "integer": "number",
    "long": "number",
    "float": "number",
    "double": "number",
    "boolean": "bool",
}


def snake(name):
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s)
    return s.lower()


def words(name):
    return [w[:-1] if w.endswith("s") and len(w) > 3 else w for w in snake(name).split("_") if w]


def lc(name):
    return name[:1].lower() + name[1:] if name else name


def load_model(data, svc):
    d = os.path.join(data, svc)
    versions = sorted(v for v in os.listdir(d) if os.path.isdir(os.path.join(d, v)))
    for v in reversed(versions):
        p = os.path.join(d, v, "service-2.json")
        if os.path.exists(p + ".gz"):
            return json.load(gzip.open(p + ".gz"))
        if os.path.exists(p):
            return json.load(open(p))
    return None


def load_calls():
    """(source, event) -> set of logged top-level member names; svc -> source; (source, op) -> event."""
    members, sources, events = {}, {}, {}
    source = None
    for line in open(os.path.join(ROOT, "crates/recipes/data/aws-calls.tsv")):
        line = line.rstrip("\n")
        if line.startswith("# service "):
            _, _, svc, _version, _protocol, src = line.split(" ")
            sources[svc] = src
        elif line.startswith("@"):
            source = line[1:]
        elif line and not line.startswith("#"):
            cols = line.split("\t")
            event, ops = cols[0], cols[1]
            for op in ([event] if ops == "=" else ops.split(",")):
                events[(source, op)] = event
            names = set()
            if cols[3] != "-":
                for group in cols[3].split(" "):
                    names.update(group.split("|"))
            members[(source, event)] = names
    return members, sources, events


def load_schema():
    schemas = [json.load(gzip.open(os.path.join(ROOT, "crates/terraform/data", f)))["resources"] for f in SCHEMAS]
    common = {}
    for rtype in schemas[0]:
        if all(rtype in s for s in schemas):
            attrs = {}
            for name, a in schemas[0][rtype].get("a", {}).items():
                if all(s[rtype].get("a", {}).get(name, {}).get("t") == a["t"] for s in schemas[1:]):
                    attrs[name] = a
            common[rtype] = attrs
    return common


def covered_pairs():
    pairs = set()
    for f in glob.glob(os.path.join(ROOT, "crates/recipes/catalog/*.toml")):
        for r in tomllib.load(open(f, "rb")).get("recipe", []):
            for e in r["events"]:
                pairs.add((r["source"], e))
    return pairs


def member_type(model, shape_name):
    shape = model["shapes"][shape_name]
    t = shape["type"]
    if t in MODEL_TYPES:
        return MODEL_TYPES[t]
    if t == "list" and model["shapes"][shape["member"]["shape"]]["type"] == "string":
        return "list(string)"
    if t == "map" and all(model["shapes"][shape[k]["shape"]]["type"] == "string" for k in ("key", "value")):
        return "map(string)"
    return None


def compatible(model_type, attr_type):
    if model_type == "list(string)":
        return attr_type in ("list(string)", "set(string)")
    return model_type == attr_type


def secret(name):
    return any(w in name for w in SECRET_WORDS)


def link(op, rtypes, schema, shape, prefixes):
    """The resource type an operation changes, and the identifying member and attribute."""
    op_words = set(words(op))
    best = []
    for rtype in rtypes:
        suffix = next((rtype[len(p):] for p in prefixes if rtype.startswith(p)), None)
        if not suffix:
            continue
        rwords = [w[:-1] if w.endswith("s") and len(w) > 3 else w for w in suffix.split("_")]
        if all(w in op_words for w in rwords):
            best.append((len(rwords), rtype, suffix))
    if not best:
        return None
    best.sort(reverse=True)
    if len(best) > 1 and best[0][0] == best[1][0]:
        return None
    _, rtype, suffix = best[0]
    attrs = schema[rtype]
    # The member must name this resource itself (`FunctionName` for a function, `TableName` for a
    # table), not a parent it shares with its siblings (`RestApiId` for an API's integrations).
    own = {"name", "arn", "id", "identifier"} | {f"{suffix}_{k}" for k in ("name", "arn", "id", "identifier")}
    for member in shape.get("required", []):
        if model_member_type(shape, member) != "string":
            continue
        for candidate in names_for(member, suffix):
            if candidate not in own:
                continue
            bare = candidate.rsplit("_", 1)[-1]
            if candidate in attrs:
                return rtype, suffix, member, candidate
            if bare in attrs:
                return rtype, suffix, member, bare  # `SubnetGroupName` of a subnet group: its `name`
            if bare in ("arn", "id"):
                return rtype, suffix, member, bare  # in every state, though not an argument
    return None


def names_for(member, suffix):
    """The attribute names a member may have: its own (snake_case), without the resource's noun
    (`TableName` -> `name` of a table), or without a leading service word (`DBClusterIdentifier`
    -> `cluster_identifier`)."""
    own = snake(member)
    out = [own, own.removeprefix(suffix + "_")]
    rest = own.split("_", 1)[1] if "_" in own else ""
    # Never down to a bare `id` or `name`: `ResourceId` names an API's resource, not this one.
    if "_" in rest:
        out.append(rest)
    return list(dict.fromkeys(out))


def model_member_type(shape, member):
    return shape.get("_types", {}).get(member)


def main():
    data = sys.argv[1] if len(sys.argv) > 1 else "/tmp/botocore/botocore/data"
    calls, sources, events = load_calls()
    schema = load_schema()
    covered = covered_pairs()
    recipes = []
    for svc in sorted(os.listdir(data)):
        if svc in SKIP_SERVICES or svc not in sources:
            continue
        model = load_model(data, svc)
        if model is None:
            continue
        source = sources[svc]
        prefixes = PREFIXES.get(svc, ["aws_" + svc.replace("-", "") + "_", "aws_" + svc.replace("-", "_") + "_"])
        rtypes = [r for r in schema if any(r.startswith(p) for p in prefixes)]
        if not rtypes:
            continue
        for op, opdef in sorted(model["operations"].items()):
            if not op.startswith(VERBS) or "input" not in opdef:
                continue
            event = events.get((source, op))
            if event is None or (source, event) in covered:
                continue
            shape = dict(model["shapes"][opdef["input"]["shape"]])
            shape["_types"] = {m: member_type(model, d["shape"]) for m, d in shape.get("members", {}).items()}
            linked = link(op, rtypes, schema, shape, prefixes)
            if linked is None:
                continue
            rtype, suffix, id_member, id_attr = linked
            logged = calls.get((source, event), set())
            if lc(id_member) not in logged:
                continue
            attrs = schema[rtype]
            sets, parents, ignores = [], [], []
            required = set(shape.get("required", []))
            for member in shape.get("members", {}):
                if member == id_member or member in PLUMBING or lc(member) not in logged:
                    continue
                if member in WHEN_MEMBERS:
                    ignores.append(lc(member))
                    continue
                mtype = shape["_types"][member]
                if mtype is None:
                    continue
                for candidate in names_for(member, suffix):
                    attr = attrs.get(candidate)
                    if attr is None or attr["m"] == "c" or secret(candidate) or secret(snake(member)):
                        continue
                    if candidate in (id_attr, "id") or (rtype, candidate) in SECRET_ATTRS:
                        continue
                    if not compatible(mtype, attr["t"]):
                        continue
                    if member in required and attr["m"] == "r" and re.search(r"_(id|name|arn)$", candidate):
                        # A parent this resource belongs to (`function_name` of an alias): part of
                        # its identity, matched against the state, never written.
                        parents.append((candidate, lc(member)))
                    else:
                        sets.append((candidate, lc(member), mtype))
                    break
            if not sets:
                continue
            lookup = []
            for a in (id_attr, "arn", "id"):
                if (a in attrs or a == "id") and a not in lookup:
                    lookup.append(a)
            recipes.append((svc, op, source, event, rtype, lc(id_member), lookup, parents, sets, ignores))
    # Services that share an event source (RDS, DocumentDB and Neptune log as rds.amazonaws.com):
    # one recipe per resource type, the service the source is named for first; the first whose
    # resource the state holds is used.
    recipes.sort(key=lambda r: (r[2], r[3], r[2].split(".")[0] != r[0]))
    seen = set()
    out = sys.stdout
    out.write("# driftback's generated recipes: the long tail of update calls, mapped from the AWS API models\n")
    out.write("# to the AWS provider's schema. Generated by scripts/generate-recipes.py; do not edit.\n")
    out.write("# Tried after the built-in catalog; the rules that confirm a mapping are in docs/recipes.md.\n")
    for svc, op, source, event, rtype, key, lookup, parents, sets, ignores in recipes:
        if (source, event, rtype) in seen:
            continue
        seen.add((source, event, rtype))
        rid = "gen-" + svc + "-" + snake(op).replace("_", "-")
        out.write("\n[[recipe]]\n")
        out.write(f'id = "{rid}"\n')
        out.write(f'source = "{source}"\n')
        out.write(f'events = ["{event}"]\n')
        out.write(f'types = ["{rtype}"]\n')
        out.write(f'key = "{key}"\n')
        out.write("lookup = [" + ", ".join(f'"{a}"' for a in lookup) + "]\n")
        if parents:
            rules = ", ".join(f'{{ attr = "{a}", from = "{m}" }}' for a, m in parents)
            out.write(f"identity = [{rules}]\n")
        if ignores:
            out.write("ignore = [" + ", ".join(f'"{m}"' for m in ignores) + "]\n")
        out.write("set = [\n")
        for attr, member, mtype in sets:
            convert = {"number": ', convert = "number"', "bool": ', convert = "bool"'}.get(mtype, "")
            out.write(f'  {{ path = "{attr}", from = "{member}"{convert} }},\n')
        out.write("]\n")


if __name__ == "__main__":
    main()
