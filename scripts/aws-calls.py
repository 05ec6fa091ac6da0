#!/usr/bin/env python3
"""Generate crates/recipes/data/aws-calls.tsv: the AWS API calls as CloudTrail logs them.

Source: the AWS API models in the PyPI wheel `botocore`
(`botocore/data/<service>/<api-version>/service-2.json[.gz]`). No Python import of botocore:

    pip download --no-deps botocore -d /tmp/botocore && (cd /tmp/botocore && unzip -q -o botocore-*.whl)
    python3 scripts/aws-calls.py /tmp/botocore/botocore/data > crates/recipes/data/aws-calls.tsv
    python3 scripts/aws-calls.py --eventbridge-sources /tmp/botocore/botocore/data \
        > crates/events/data/eventbridge-sources.tsv

The second form writes, for each event source, the service names the models give it (directory,
`endpointPrefix`, `signingName`, `serviceId`): an EventBridge envelope's `aws.<name>` source must be
one of them (docs/operations.md).

The transformation to CloudTrail's shape (event source, event names, `requestParameters` member
names) is documented in docs/aws-calls.md; every rule below names its reason there.
"""

import gzip
import json
import os
import re
import sys

# Every service in the models is kept (about 1.5 MB of text, 280 kB gzip'd): a recipe learned or
# written for any service is checked, and no source is "unknown" because it was left out.

# eventSource: `<signingName or endpointPrefix>.amazonaws.com`, except where CloudTrail uses another.
SOURCE_OVERRIDES = {
    "ses": "ses.amazonaws.com",  # endpointPrefix `email`
    "sesv2": "ses.amazonaws.com",
    "stepfunctions": "states.amazonaws.com",
}

# S3 logs bucket-level calls under its own names (S3 user guide, "Amazon S3 CloudTrail events",
# https://docs.aws.amazon.com/AmazonS3/latest/userguide/cloudtrail-logging-s3-info.html).
# API operation -> CloudTrail eventName.
S3_EVENT_NAMES = {
    "PutPublicAccessBlock": "PutBucketPublicAccessBlock",
    "GetPublicAccessBlock": "GetBucketPublicAccessBlock",
    "DeletePublicAccessBlock": "DeleteBucketPublicAccessBlock",
    "PutBucketLifecycleConfiguration": "PutBucketLifecycle",
    "GetBucketLifecycleConfiguration": "GetBucketLifecycle",
    "PutBucketNotificationConfiguration": "PutBucketNotification",
    "GetBucketNotificationConfiguration": "GetBucketNotification",
}
# S3 Control's account-level public access block is logged under s3.amazonaws.com as these.
S3CONTROL_EVENT_NAMES = {
    "PutPublicAccessBlock": "PutAccountPublicAccessBlock",
    "GetPublicAccessBlock": "GetAccountPublicAccessBlock",
    "DeletePublicAccessBlock": "DeleteAccountPublicAccessBlock",
}

# S3 request parameters CloudTrail logs that are not model members: the policy document of
# PutBucketPolicy is logged parsed, as `bucketPolicy` (the model's blob payload `Policy`).
S3_EXTRA_MEMBERS = {"PutBucketPolicy": ["bucketPolicy"]}

# EC2 list members whose CloudTrail names follow no rule derivable from the model (the EC2 XML
# schema's names): (operation, member) -> extra accepted names.
EC2_ALIASES = {
    ("DescribeSecurityGroups", "GroupIds"): ["securityGroupIdSet"],
    ("DescribeSecurityGroups", "GroupNames"): ["securityGroupSet"],
    # RunInstances logs the image and the counts inside `instancesSet.items[]`
    # (`{"instancesSet": {"items": [{"imageId": ..., "minCount": 1, "maxCount": 1}]}}`).
    ("RunInstances", "ImageId"): ["instancesSet"],
    ("RunInstances", "MinCount"): ["instancesSet"],
    ("RunInstances", "MaxCount"): ["instancesSet"],
}

# EC2 members CloudTrail logs under another name than the model's, whatever the model's
# locationName says: (operation, member) -> (the name CloudTrail logs, whether the model's name is
# also seen). Each is taken from records AWS prints:
# - CreateNetworkAclEntry and ReplaceNetworkAclEntry log `Protocol` as `aclProtocol` (both
#   directions, every record seen, console and API; never `protocol`).
# - CreateVolume logs `AvailabilityZone` as `zone` (the KMS Developer Guide's "How Amazon EBS uses
#   KMS" record; its responseElements use `zone` too). Records from other writers show
#   `availabilityZone`, so that name is kept as the second form.
EC2_RENAMES = {
    ("CreateNetworkAclEntry", "Protocol"): ("aclProtocol", False),
    ("ReplaceNetworkAclEntry", "Protocol"): ("aclProtocol", False),
    ("CreateVolume", "AvailabilityZone"): ("zone", True),
}

# Members of other protocols CloudTrail logs under a name other than the lower-camel rule gives:
# (service, operation, member) -> the name logged. SQS's AddPermission logs `AWSAccountIds` as
# the API spells it (the SQS Developer Guide's AddPermission record), not `aWSAccountIds`; RDS's
# `DBInstanceIdentifier` does follow the rule (`dBInstanceIdentifier`).
MEMBER_RENAMES = {
    ("sqs", "AddPermission", "AWSAccountIds"): "AWSAccountIds",
}

READ_PREFIXES = ("Describe", "Get", "List", "Head", "Lookup", "Search", "Check", "BatchGet")


def lc(name):
    return name[:1].lower() + name[1:] if name else name


def load(data, svc):
    d = os.path.join(data, svc)
    versions = sorted(v for v in os.listdir(d) if os.path.isdir(os.path.join(d, v)))
    for v in reversed(versions):
        p = os.path.join(d, v, "service-2.json")
        if os.path.exists(p + ".gz"):
            return json.load(gzip.open(p + ".gz")), v
        if os.path.exists(p):
            return json.load(open(p)), v
    return None, None


def ec2_list_names(base):
    """CloudTrail's EC2 names for a list member: `xxxSet` and the XML schema's plural forms."""
    out = [base, base + "Set"]
    for suffix in ("Ids", "Id", "s"):
        if base.endswith(suffix) and len(base) > len(suffix):
            stem = base[: -len(suffix)]
            out += [stem + "Set", stem + "sSet"]
    return out


def members_ec2(model, op, shape):
    groups, raw = [], []
    lowercase_location = False
    for name, m in shape.get("members", {}).items():
        loc = m.get("locationName")
        q = m.get("queryName")
        if loc and loc[:1].islower():
            lowercase_location = True
        target = model["shapes"][m["shape"]]
        bases = []
        for b in (lc(loc) if loc else None, lc(name), lc(q) if q else None):
            if b and b not in bases:
                bases.append(b)
        names = []
        if target["type"] == "list":
            # A list named by its own element (`Filter`) is logged as `filterSet`; one without a
            # locationName (`IpPermissions`) keeps its name (`ipPermissions.items`).
            primary = (lc(loc) + "Set") if loc else lc(name)
            names.append(primary)
            for b in bases:
                names += ec2_list_names(b)
        else:
            names += bases
        names += EC2_ALIASES.get((op, name), [])
        renamed = EC2_RENAMES.get((op, name))
        if renamed:
            logged, model_name_too = renamed
            names = [logged] + (names if model_name_too else [])
        groups.append(dedup(names))
        for r in (name, loc[:1].upper() + loc[1:] if loc else None, q):
            if r and r not in raw:
                raw.append(r)
    # Calls added after EC2's XML schema (no member carries a lower-case wire name) are logged
    # with their parameters inside `<Operation>Request`, under the query wire names.
    wrapped = bool(shape.get("members")) and not lowercase_location
    return groups, raw, wrapped


def members_s3(model, op, opdef, shape):
    groups = [["Host"]]
    uri = opdef.get("http", {}).get("requestUri", "")
    if "?" in uri:
        for part in uri.split("?", 1)[1].split("&"):
            flag = part.split("=", 1)[0]
            if flag and not flag.startswith("x-id"):
                groups.append([flag])
    payload = shape.get("payload")
    for name, m in shape.get("members", {}).items():
        loc = m.get("locationName") or name
        where = m.get("location")
        if name == "Bucket" and where == "uri":
            groups.append(["bucketName"])
        elif name == "Key" and where == "uri":
            groups.append(["key"])
        elif where in ("querystring", "header", "headers"):
            groups.append(dedup([loc, lc(name)]))
        elif where == "uri":
            groups.append(dedup([lc(loc), lc(name)]))
        elif name == payload:
            groups.append(dedup([loc, name]))
        else:
            groups.append([name])
    for extra in S3_EXTRA_MEMBERS.get(op, []):
        groups.append([extra])
    return groups


def members_lower_camel(svc, op, shape):
    return [[MEMBER_RENAMES.get((svc, op, name), lc(name))] for name in shape.get("members", {})]


def dedup(xs):
    out = []
    for x in xs:
        if x and x not in out:
            out.append(x)
    return out


def service_id_names(service_id):
    """`Elastic Load Balancing v2` -> `elastic-load-balancing-v2`, `elasticloadbalancingv2`."""
    words = re.findall(r"[A-Za-z0-9]+", service_id.lower())
    return ["-".join(words), "".join(words)]


def eventbridge_sources(data):
    """eventSource -> the service names an `aws.<name>` envelope source may carry."""
    names = {}
    for svc in sorted(d for d in os.listdir(data) if os.path.isdir(os.path.join(data, d))):
        model, _ = load(data, svc)
        if model is None:
            continue
        md = model["metadata"]
        source = SOURCE_OVERRIDES.get(svc) or (md.get("signingName") or md["endpointPrefix"]) + ".amazonaws.com"
        found = names.setdefault(source, [source[: -len(".amazonaws.com")]])
        candidates = [svc, md["endpointPrefix"], md.get("signingName")] + service_id_names(md.get("serviceId", ""))
        for name in candidates:
            if name and name not in found:
                found.append(name)
    out = sys.stdout
    out.write("# eventSource -> service names an EventBridge `aws.<name>` source may carry for it.\n")
    out.write("# Generated by scripts/aws-calls.py --eventbridge-sources; do not edit.\n")
    for source in sorted(names):
        out.write(source + "\t" + " ".join(names[source]) + "\n")


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--eventbridge-sources":
        eventbridge_sources(sys.argv[2] if len(sys.argv) > 2 else "/tmp/botocore/botocore/data")
        return
    data = sys.argv[1] if len(sys.argv) > 1 else "/tmp/botocore/botocore/data"
    table = {}  # (source, event) -> dict
    versions = {}
    services = sorted(d for d in os.listdir(data) if os.path.isdir(os.path.join(data, d)))
    for svc in services:
        model, version = load(data, svc)
        if model is None:
            continue
        md = model["metadata"]
        source = SOURCE_OVERRIDES.get(svc) or (md.get("signingName") or md["endpointPrefix"]) + ".amazonaws.com"
        protocol = md["protocol"]
        versions[svc] = (version, protocol, source)
        for op, opdef in model["operations"].items():
            shape = model["shapes"][opdef["input"]["shape"]] if "input" in opdef else {"members": {}}
            raw, wrapped = [], False
            if protocol == "ec2":
                groups, raw, wrapped = members_ec2(model, op, shape)
            elif svc in ("s3", "s3control"):
                groups = members_s3(model, op, opdef, shape)
            else:
                groups = members_lower_camel(svc, op, shape)
            event = op
            if svc == "s3":
                event = S3_EVENT_NAMES.get(op, op)
            elif svc == "s3control":
                if "Bucket" in op:
                    continue  # S3 on Outposts buckets: logged by s3-outposts.amazonaws.com
                event = S3CONTROL_EVENT_NAMES.get(op, op)
                if (source, event) in table:
                    continue  # an S3 bucket call of the same name wins
            key = (source, event)
            row = table.get(key)
            if row is None:
                row = table[key] = {"ops": [], "groups": [], "raw": [], "wrapped": wrapped}
            if op not in row["ops"]:
                row["ops"].append(op)
            for g in groups:  # elb and elbv2 share a source: members are the union
                if not any(g[0] in h for h in row["groups"]):
                    row["groups"].append(g)
            for r in raw:
                if r not in row["raw"]:
                    row["raw"].append(r)
    out = sys.stdout
    out.write("# AWS API calls as CloudTrail logs them. Generated by scripts/aws-calls.py; do not edit.\n")
    out.write("# Format and rules: docs/aws-calls.md.\n")
    root = os.path.dirname(os.path.dirname(os.path.abspath(data)))
    dist = [d for d in os.listdir(root) if d.startswith("botocore-") and d.endswith(".dist-info")]
    out.write("# models: " + (dist[0][: -len(".dist-info")] if dist else "botocore (version unknown)") + "\n")
    for svc, (version, protocol, source) in versions.items():
        out.write(f"# service {svc} {version} {protocol} {source}\n")
    last = None
    for (source, event) in sorted(table):
        row = table[(source, event)]
        if source != last:
            out.write(f"@{source}\n")
            last = source
        ops = "=" if row["ops"] == [event] else ",".join(row["ops"])
        flags = ("r" if event.startswith(READ_PREFIXES) else "w") + ("W" if row["wrapped"] else "")
        members = " ".join("|".join(g) for g in row["groups"]) or "-"
        line = f"{event}\t{ops}\t{flags}\t{members}"
        if row["raw"]:
            line += "\t" + " ".join(row["raw"])
        out.write(line + "\n")


if __name__ == "__main__":
    main()
