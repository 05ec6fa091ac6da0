#!/usr/bin/env python3
"""The same work as benches/intake.rs, written plainly with the json module, for the ratio.

    python3 intake.py TRAIL.json

Parse the CloudTrail log file, normalise each record (event name without its API version suffix,
the actor and how the call was made), drop noise with a reason (failed, read-only, data event, not
an API call, the IaC tool's principal or user agent), and group what is left by resource and actor
session within a 120-second quiet window. Prints the median of five runs.
"""
import fnmatch
import json
import re
import sys
import time
from datetime import datetime

ID_KEYS = [
    "resourceId", "instanceId", "groupId", "bucketName", "queueUrl", "topicArn", "subscriptionArn",
    "functionName", "roleName", "tableName", "dBInstanceIdentifier", "dBClusterIdentifier",
    "autoScalingGroupName", "alarmName", "alarmNames", "volumeId", "subnetId", "vpcId", "routeTableId",
    "internetGatewayId", "natGatewayId", "networkInterfaceId", "allocationId", "launchTemplateId",
    "loadBalancerArn", "targetGroupArn", "loadBalancerName", "repositoryName", "clusterName", "keyId",
    "hostedZoneId", "secretId", "logGroupName", "ruleName", "stateMachineArn", "policyArn", "userName",
    "queueName", "name",
]
VERSION_SUFFIX = re.compile(r"(?<=[A-Za-z])\d{8}(v\d+)?$")
READ_PREFIXES = ("Describe", "Get", "List", "Head", "Lookup", "Search", "Check")
CREATE_PREFIXES = ("Create", "Run", "Allocate", "Register", "Import", "Copy")
IAC_PRINCIPALS = ["terraform-ci"]
QUIET_WINDOW = 120


def call_via(identity_type, user_agent, invoked_by, from_console):
    ua = user_agent.lower()
    if "opentofu/" in ua:
        return "opentofu"
    if "terraform/" in ua or "terraform-provider-aws/" in ua or "hashicorp/" in ua:
        return "terraform"
    if identity_type == "AWSService" or (invoked_by or "").endswith(".amazonaws.com"):
        return "aws-service"
    if (from_console or ua == "aws internal" or "console.amazonaws.com" in ua or ua.startswith("mozilla/")
            or "console.aws.amazon.com" in ua or "console/" in ua):
        return "console"
    if ua.startswith("aws-cli/") or " aws-cli/" in ua or "md/command#" in ua:
        return "cli"
    if "sdk" in ua or ua.startswith("boto") or "botocore" in ua or ua.startswith("aws-sdk"):
        return "sdk"
    return "unknown"


def normalize(r):
    identity = r["userIdentity"]
    context = identity.get("sessionContext") or {}
    issuer = context.get("sessionIssuer") or {}
    identity_type = identity.get("type", "Unknown")
    arn = identity.get("arn")
    session_name = arn.rsplit("/", 1)[-1] if identity_type == "AssumedRole" and arn else None
    source_ip = r.get("sourceIPAddress")
    invoked_by = identity.get("invokedBy") or (source_ip if source_ip and source_ip.endswith(".amazonaws.com") else None)
    from_console = r.get("sessionCredentialFromConsole") in ("true", True) or \
        (context.get("attributes") or {}).get("sessionCredentialFromConsole") in ("true", True)
    user_agent = r.get("userAgent", "")
    name = VERSION_SUFFIX.sub("", r["eventName"])
    read_only = r.get("readOnly")
    if isinstance(read_only, str):
        read_only = read_only.lower() == "true"
    elif read_only is None:
        read_only = name.startswith(READ_PREFIXES)
    management = r.get("managementEvent")
    if management is None:
        management = r.get("eventCategory", "Management") == "Management"
    display = (identity.get("userName") if identity_type == "IAMUser" else None) or context.get("sourceIdentity") \
        or session_name or identity.get("userName") or invoked_by or arn or "unknown"
    return {
        "id": r["eventID"],
        "time": datetime.fromisoformat(r["eventTime"]).timestamp(),
        "source": r["eventSource"],
        "name": name,
        "region": r.get("awsRegion", ""),
        "account": r.get("recipientAccountId") or identity.get("accountId", ""),
        "identity_type": identity_type,
        "arn": arn,
        "session_issuer": issuer.get("arn"),
        "session_name": session_name,
        "invoked_by": invoked_by,
        "via": call_via(identity_type, user_agent, invoked_by, from_console),
        "display": display,
        "request": r.get("requestParameters"),
        "response": r.get("responseElements"),
        "read_only": read_only,
        "error": r.get("errorCode"),
        "management": management,
        "event_type": r.get("eventType", "AwsApiCall"),
    }


def is_iac_principal(e):
    role = (e["session_issuer"] or "").rsplit("/", 1)[-1]
    for pattern in IAC_PRINCIPALS:
        for candidate in (e["arn"], e["session_issuer"], role):
            if candidate and fnmatch.fnmatchcase(candidate, pattern):
                return True
    return False


def drop_reason(e):
    if e["error"]:
        return "failed"
    if e["read_only"]:
        return "read-only"
    if not e["management"]:
        return "data-event"
    if e["event_type"] != "AwsApiCall":
        return "not-api-call"
    if is_iac_principal(e):
        return "iac-principal"
    if e["via"] in ("terraform", "opentofu"):
        return "iac-user-agent"
    return None


def collect(value, key, depth, out):
    if depth > 4:
        return
    if isinstance(value, dict):
        if key in value:
            v = value[key]
            if isinstance(v, str) and v:
                out.append(v)
            elif isinstance(v, list):
                out.extend(s for s in v if isinstance(s, str) and s)
            if out:
                return
        for v in value.values():
            collect(v, key, depth + 1, out)
    elif isinstance(value, list):
        for v in value:
            collect(v, key, depth + 1, out)


def resource_ids(e):
    sources = [e["response"], e["request"]] if e["name"].startswith(CREATE_PREFIXES) else [e["request"]]
    for source in sources:
        for key in ID_KEYS:
            found = []
            collect(source, key, 0, found)
            if found:
                return list(dict.fromkeys(found))
    return []


def group(events):
    events.sort(key=lambda e: (e["time"], e["id"]))
    sets, open_sets = [], {}
    for e in events:
        session = e["arn"] or e["invoked_by"] or e["display"]
        for resource in resource_ids(e) or [None]:
            key = (resource, session)
            i = open_sets.get(key)
            if resource is not None and i is not None and e["time"] - sets[i][-1]["time"] <= QUIET_WINDOW:
                sets[i].append(e)
            else:
                open_sets[key] = len(sets)
                sets.append([e])
    return sets


def run(data):
    start = time.perf_counter()
    records = json.loads(data)["Records"]
    kept, dropped = [], 0
    for r in records:
        e = normalize(r)
        if drop_reason(e) is None:
            kept.append(e)
        else:
            dropped += 1
    n = len(kept)
    sets = group(kept)
    return time.perf_counter() - start, n, dropped, len(sets)


def main():
    with open(sys.argv[1], "rb") as f:
        data = f.read()
    runs = sorted(run(data) for _ in range(5))
    seconds, kept, dropped, change_sets = runs[len(runs) // 2]
    total = kept + dropped
    print(f"{total / seconds:>9.0f} records/s  (median of 5: {seconds:.3f}s; kept {kept}, dropped {dropped}, "
          f"change sets {change_sets})")


if __name__ == "__main__":
    main()
