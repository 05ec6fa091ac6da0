# The feed of a driftback deployment: CloudTrail's API calls, through an EventBridge rule, into an
# encrypted SQS queue with a dead-letter queue; and the IAM role the daemon runs as.

data "aws_partition" "current" {}

locals {
  # Only AWS can put an event whose source begins with "aws." on a bus; PutEvents callers cannot.
  # With this pattern nobody can forge a console change into the queue.
  cloudtrail_event_pattern = jsonencode({
    "detail-type" = ["AWS API Call via CloudTrail"]
    source        = [{ prefix = "aws." }]
  })
}

resource "aws_sqs_queue" "dead_letter" {
  name                              = "${var.name}-dead-letter"
  message_retention_seconds         = 1209600
  sqs_managed_sse_enabled           = var.kms_key_arn == null ? true : null
  kms_master_key_id                 = var.kms_key_arn
  kms_data_key_reuse_period_seconds = var.kms_key_arn == null ? null : 3600
  tags                              = var.tags
}

resource "aws_sqs_queue" "events" {
  name                              = var.name
  visibility_timeout_seconds        = var.visibility_timeout_seconds
  message_retention_seconds         = var.message_retention_seconds
  receive_wait_time_seconds         = 20
  sqs_managed_sse_enabled           = var.kms_key_arn == null ? true : null
  kms_master_key_id                 = var.kms_key_arn
  kms_data_key_reuse_period_seconds = var.kms_key_arn == null ? null : 3600
  tags                              = var.tags
}

resource "aws_sqs_queue_redrive_policy" "events" {
  queue_url = aws_sqs_queue.events.id
  redrive_policy = jsonencode({
    deadLetterTargetArn = aws_sqs_queue.dead_letter.arn
    maxReceiveCount     = var.max_receive_count
  })
}

resource "aws_sqs_queue_redrive_allow_policy" "dead_letter" {
  queue_url = aws_sqs_queue.dead_letter.id
  redrive_allow_policy = jsonencode({
    redrivePermission = "byQueue"
    sourceQueueArns   = [aws_sqs_queue.events.arn]
  })
}

resource "aws_cloudwatch_event_rule" "cloudtrail" {
  name           = "${var.name}-cloudtrail"
  description    = "AWS API calls recorded by CloudTrail, for driftback"
  event_bus_name = var.event_bus_name
  event_pattern  = local.cloudtrail_event_pattern
  tags           = var.tags
}

resource "aws_cloudwatch_event_target" "queue" {
  rule           = aws_cloudwatch_event_rule.cloudtrail.name
  event_bus_name = var.event_bus_name
  target_id      = "driftback-queue"
  arn            = aws_sqs_queue.events.arn
}

data "aws_iam_policy_document" "queue" {
  statement {
    sid     = "CloudTrailEventsFromTheRule"
    actions = ["sqs:SendMessage"]
    principals {
      type        = "Service"
      identifiers = ["events.amazonaws.com"]
    }
    resources = [aws_sqs_queue.events.arn]
    condition {
      test     = "ArnEquals"
      variable = "aws:SourceArn"
      values   = [aws_cloudwatch_event_rule.cloudtrail.arn]
    }
  }

  dynamic "statement" {
    for_each = var.trail_bucket_name == null ? [] : [var.trail_bucket_name]
    content {
      sid     = "TrailLogFilesFromTheBucket"
      actions = ["sqs:SendMessage"]
      principals {
        type        = "Service"
        identifiers = ["s3.amazonaws.com"]
      }
      resources = [aws_sqs_queue.events.arn]
      condition {
        test     = "ArnEquals"
        variable = "aws:SourceArn"
        values   = ["arn:${data.aws_partition.current.partition}:s3:::${statement.value}"]
      }
    }
  }
}

resource "aws_sqs_queue_policy" "events" {
  queue_url = aws_sqs_queue.events.id
  policy    = data.aws_iam_policy_document.queue.json
}

data "aws_cloudwatch_event_bus" "this" {
  name = var.event_bus_name
}

# Member accounts forward their CloudTrail events here (modules/forwarder in each of them).
data "aws_iam_policy_document" "bus" {
  count = length(var.forwarding_account_ids) > 0 ? 1 : 0

  statement {
    sid     = "ForwardedCloudTrailEvents"
    actions = ["events:PutEvents"]
    principals {
      type        = "AWS"
      identifiers = [for id in var.forwarding_account_ids : "arn:${data.aws_partition.current.partition}:iam::${id}:root"]
    }
    resources = [data.aws_cloudwatch_event_bus.this.arn]
  }
}

resource "aws_cloudwatch_event_bus_policy" "forwarding" {
  count = length(var.forwarding_account_ids) > 0 ? 1 : 0

  event_bus_name = var.event_bus_name
  policy         = data.aws_iam_policy_document.bus[0].json
}

# An organisation trail's log files: S3 notifies the queue of each new object under the prefix.
resource "aws_s3_bucket_notification" "trail" {
  count = var.trail_bucket_name == null ? 0 : 1

  bucket = var.trail_bucket_name

  queue {
    queue_arn     = aws_sqs_queue.events.arn
    events        = ["s3:ObjectCreated:*"]
    filter_prefix = var.trail_prefix
  }

  depends_on = [aws_sqs_queue_policy.events]
}
