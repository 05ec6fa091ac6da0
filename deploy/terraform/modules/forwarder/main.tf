# Forwards CloudTrail's API-call events from this account and region to the central bus of a
# driftback deployment. Put one in us-east-1 of the central account too: IAM, STS and CloudFront
# calls are delivered there only. A forwarded event keeps its "aws.*" source, so the central rule's
# pattern still tells AWS's events from anybody's PutEvents.

terraform {
  required_version = ">= 1.5.0"

  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.0, < 7.0"
    }
  }
}

variable "name" {
  description = "Name of the rule and of the role EventBridge uses to forward."
  type        = string
  default     = "driftback-forward"
}

variable "central_bus_arn" {
  description = "ARN of the event bus the driftback deployment reads (in another region or account)."
  type        = string
}

variable "tags" {
  description = "Tags for the rule and the role."
  type        = map(string)
  default     = {}
}

resource "aws_cloudwatch_event_rule" "cloudtrail" {
  name        = var.name
  description = "AWS API calls recorded by CloudTrail, forwarded to driftback's bus"
  event_pattern = jsonencode({
    "detail-type" = ["AWS API Call via CloudTrail"]
    source        = [{ prefix = "aws." }]
  })
  tags = var.tags
}

data "aws_iam_policy_document" "assume" {
  statement {
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["events.amazonaws.com"]
    }
  }
}

resource "aws_iam_role" "forward" {
  name               = var.name
  assume_role_policy = data.aws_iam_policy_document.assume.json
  tags               = var.tags
}

data "aws_iam_policy_document" "forward" {
  statement {
    actions   = ["events:PutEvents"]
    resources = [var.central_bus_arn]
  }
}

resource "aws_iam_role_policy" "forward" {
  name   = var.name
  role   = aws_iam_role.forward.id
  policy = data.aws_iam_policy_document.forward.json
}

resource "aws_cloudwatch_event_target" "central_bus" {
  rule      = aws_cloudwatch_event_rule.cloudtrail.name
  target_id = "driftback-central-bus"
  arn       = var.central_bus_arn
  role_arn  = aws_iam_role.forward.arn
}

output "rule_arn" {
  description = "The forwarding rule."
  value       = aws_cloudwatch_event_rule.cloudtrail.arn
}
