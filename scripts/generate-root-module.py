#!/usr/bin/env python3
"""Write one root module of N generated SQS queues (ten per file), its state and one
SetQueueAttributes event, as a git repository: the fixture of the cost-per-change-set benchmark
(docs/benchmarks.md, "Cost of one change set").

    scripts/generate-root-module.py N DIR

DIR becomes a git repository with queues_NNNN.tf, variables.tf and terraform.tfstate; the event is
written to DIR.events.json (a change of queue q7's visibility timeout by a person). Then:

    driftback reconcile --dry-run --events DIR.events.json --repo DIR
"""
import json
import os
import subprocess
import sys


def main() -> None:
    if len(sys.argv) != 3 or not sys.argv[1].isdigit() or int(sys.argv[1]) < 10:
        sys.exit("usage: scripts/generate-root-module.py N DIR   (N >= 10 queues)")
    n, out = int(sys.argv[1]), sys.argv[2]
    if os.path.exists(out):
        sys.exit(f"{out} exists; remove it or choose another directory")
    os.makedirs(out)
    resources = []
    for f in range((n + 9) // 10):
        with open(f"{out}/queues_{f:04d}.tf", "w") as tf:
            for i in range(f * 10, min(n, f * 10 + 10)):
                tf.write(
                    f'resource "aws_sqs_queue" "q{i}" {{\n'
                    f'  name                       = "q{i}"\n'
                    f"  visibility_timeout_seconds = 30\n"
                    f"  tags = {{\n    Team = var.team\n  }}\n}}\n\n"
                )
                url = f"https://sqs.us-east-1.amazonaws.com/123456789012/q{i}"
                resources.append({
                    "mode": "managed", "type": "aws_sqs_queue", "name": f"q{i}",
                    "provider": 'provider["registry.terraform.io/hashicorp/aws"]',
                    "instances": [{"schema_version": 0, "attributes": {
                        "id": url, "url": url, "name": f"q{i}", "arn": f"arn:aws:sqs:us-east-1:123456789012:q{i}",
                        "visibility_timeout_seconds": 30, "tags": {"Team": "core"}, "tags_all": {"Team": "core"}}}],
                })
    with open(f"{out}/variables.tf", "w") as tf:
        tf.write('variable "team" {\n  type    = string\n  default = "core"\n}\n')
    state = {"version": 4, "terraform_version": "1.9.5", "serial": 1, "lineage": "generated", "outputs": {},
             "resources": resources}
    with open(f"{out}/terraform.tfstate", "w") as fh:
        json.dump(state, fh)
    event = {"Records": [{
        "eventVersion": "1.08",
        "userIdentity": {"type": "IAMUser", "arn": "arn:aws:iam::123456789012:user/alice",
                         "accountId": "123456789012", "userName": "alice"},
        "eventTime": "2024-03-01T10:00:00Z", "eventSource": "sqs.amazonaws.com", "eventName": "SetQueueAttributes",
        "awsRegion": "us-east-1", "sourceIPAddress": "203.0.113.1", "userAgent": "aws-cli/2.15.0",
        "requestParameters": {"queueUrl": "https://sqs.us-east-1.amazonaws.com/123456789012/q7",
                              "attributes": {"VisibilityTimeout": "60"}},
        "responseElements": None, "eventID": "generated-1", "readOnly": False, "eventType": "AwsApiCall",
        "managementEvent": True, "recipientAccountId": "123456789012"}]}
    with open(f"{out}.events.json", "w") as fh:
        json.dump(event, fh)
    git = ["git", "-C", out, "-c", "user.name=generator", "-c", "user.email=generator@localhost"]
    subprocess.run(["git", "init", "-q", "-b", "main", out], check=True)
    subprocess.run(git + ["add", "."], check=True)
    subprocess.run(git + ["commit", "-q", "-m", "generated root module"], check=True)
    print(f"{n} queues in {(n + 9) // 10 + 1} files at {out}; event at {out}.events.json")


if __name__ == "__main__":
    main()
