#!/usr/bin/env python3
"""Seed a local driftback stack: an SQS queue fed by an EventBridge rule on CloudTrail's API calls
(in moto, or any endpoint speaking the AWS APIs), a bare git remote holding the demo infrastructure
repository, and the demo's CloudTrail records put on the bus as AWS would deliver them.

    seed.py --endpoint http://127.0.0.1:5000 --remote /srv/git/infra.git \
            --project crates/driftback/demo/project --events crates/driftback/demo/events.json

Prints the queue URL on the last line of its output. Needs boto3 and git. Idempotent: an existing
remote is left as it is, the queue and rule are reused.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import boto3

PATTERN = {"detail-type": ["AWS API Call via CloudTrail"], "source": [{"prefix": "aws."}]}


def git(*args, cwd=None):
    subprocess.run(["git", *args], cwd=cwd, check=True, stdout=subprocess.DEVNULL)


def seed_remote(remote, project):
    if os.path.exists(os.path.join(remote, "HEAD")):
        print(f"remote {remote} exists, kept", file=sys.stderr)
        return
    with tempfile.TemporaryDirectory() as work:
        for name in sorted(os.listdir(project)):
            shutil.copy(os.path.join(project, name), work)
        git("init", "-q", "-b", "main", cwd=work)
        git("add", "-A", cwd=work)
        git("-c", "user.name=driftback demo", "-c", "user.email=demo@driftback.invalid",
            "commit", "-q", "-m", "Terraform for the demo web stack", cwd=work)
        os.makedirs(os.path.dirname(os.path.abspath(remote)), exist_ok=True)
        git("clone", "-q", "--bare", work, remote)
    print(f"remote {remote} seeded from {project}", file=sys.stderr)


def seed_feed(endpoint, region, queue_name):
    session = boto3.session.Session(
        aws_access_key_id=os.environ.get("AWS_ACCESS_KEY_ID", "testing"),
        aws_secret_access_key=os.environ.get("AWS_SECRET_ACCESS_KEY", "testing"),
        region_name=region,
    )
    sqs = session.client("sqs", endpoint_url=endpoint)
    events = session.client("events", endpoint_url=endpoint)
    dead = sqs.create_queue(QueueName=f"{queue_name}-dead-letter")["QueueUrl"]
    dead_arn = sqs.get_queue_attributes(QueueUrl=dead, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    queue = sqs.create_queue(
        QueueName=queue_name,
        Attributes={"RedrivePolicy": json.dumps({"deadLetterTargetArn": dead_arn, "maxReceiveCount": "5"})},
    )["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    events.put_rule(Name=f"{queue_name}-cloudtrail", EventPattern=json.dumps(PATTERN))
    events.put_targets(Rule=f"{queue_name}-cloudtrail", Targets=[{"Id": "driftback-queue", "Arn": arn}])
    return events, queue


def put_records(events, path):
    with open(path) as f:
        records = json.load(f)["Records"]
    for i in range(0, len(records), 10):
        entries = [
            {
                "Source": "aws." + r["eventSource"].split(".")[0],
                "DetailType": "AWS API Call via CloudTrail",
                "Detail": json.dumps(r),
            }
            for r in records[i:i + 10]
        ]
        failed = events.put_events(Entries=entries).get("FailedEntryCount", 0)
        if failed:
            sys.exit(f"seed.py: the bus refused {failed} of {len(entries)} events")
    print(f"{len(records)} CloudTrail records put on the bus", file=sys.stderr)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--endpoint", required=True, help="AWS API endpoint (moto)")
    p.add_argument("--region", default="us-east-1")
    p.add_argument("--queue", default="driftback", help="queue name")
    p.add_argument("--remote", required=True, help="bare git repository to create")
    p.add_argument("--project", required=True, help="directory of the infrastructure repository's files")
    p.add_argument("--events", help="CloudTrail file whose records are put on the bus")
    args = p.parse_args()
    seed_remote(args.remote, args.project)
    events, queue = seed_feed(args.endpoint, args.region, args.queue)
    if args.events:
        put_records(events, args.events)
    print(queue)


if __name__ == "__main__":
    main()
