# The feed of a driftback deployment: CloudTrail's API calls, through an EventBridge rule, into an
# encrypted SQS queue with a dead-letter queue; and the IAM role the daemon runs as.

data "aws_partition" "current" {}

data "aws_caller_identity" "current" {}

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

  # EventBridge retries a delivery that fails (a throttled queue, a key it may not use) for up to a
  # day; what it still cannot deliver goes to the undelivered queue instead of being dropped.
  retry_policy {
    maximum_event_age_in_seconds = var.target_max_event_age_seconds
    maximum_retry_attempts       = 185
  }

  dead_letter_config {
    arn = aws_sqs_queue.undelivered.arn
  }
}

# Events EventBridge could not deliver to the queue (their message attributes say why:
# ERROR_CODE, ERROR_MESSAGE). Once the cause is fixed, move them to the queue with
# `aws sqs start-message-move-task`.
resource "aws_sqs_queue" "undelivered" {
  name                              = "${var.name}-undelivered"
  message_retention_seconds         = 1209600
  sqs_managed_sse_enabled           = var.kms_key_arn == null ? true : null
  kms_master_key_id                 = var.kms_key_arn
  kms_data_key_reuse_period_seconds = var.kms_key_arn == null ? null : 3600
  tags                              = var.tags
}

data "aws_iam_policy_document" "undelivered" {
  statement {
    sid     = "UndeliveredEventsFromTheRule"
    actions = ["sqs:SendMessage"]
    principals {
      type        = "Service"
      identifiers = ["events.amazonaws.com"]
    }
    resources = [aws_sqs_queue.undelivered.arn]
    condition {
      test     = "ArnEquals"
      variable = "aws:SourceArn"
      values   = [aws_cloudwatch_event_rule.cloudtrail.arn]
    }
    condition {
      test     = "StringEquals"
      variable = "aws:SourceAccount"
      values   = [data.aws_caller_identity.current.account_id]
    }
  }
}

resource "aws_sqs_queue_policy" "undelivered" {
  queue_url = aws_sqs_queue.undelivered.id
  policy    = data.aws_iam_policy_document.undelivered.json
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
    condition {
      test     = "StringEquals"
      variable = "aws:SourceAccount"
      values   = [data.aws_caller_identity.current.account_id]
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
      # A bucket name can be deleted and taken by another account: the bucket's owner is pinned too.
      condition {
        test     = "StringEquals"
        variable = "aws:SourceAccount"
        values   = [coalesce(var.trail_bucket_account_id, data.aws_caller_identity.current.account_id)]
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
#
# A bus has one resource policy, and aws_cloudwatch_event_bus_policy replaces all of it. Statements
# other tools put on the bus are kept when given in bus_policy_documents (merged with this one);
# with manage_bus_policy = false the module leaves the policy alone and outputs bus_policy_json for
# whoever owns the bus to merge.
data "aws_iam_policy_document" "bus" {
  count = length(var.forwarding_account_ids) > 0 ? 1 : 0

  source_policy_documents = var.bus_policy_documents

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
  count = length(var.forwarding_account_ids) > 0 && var.manage_bus_policy ? 1 : 0

  event_bus_name = var.event_bus_name
  policy         = data.aws_iam_policy_document.bus[0].json
}

# An organisation trail's log files: S3 notifies the queue of each new object under the prefix.
# Only the bucket's owner can configure its notifications: when the bucket is in another account
# (a log-archive account), set trail_bucket_account_id and apply modules/trail-notification there.
resource "aws_s3_bucket_notification" "trail" {
  count = var.trail_bucket_name != null && var.trail_bucket_account_id == null ? 1 : 0

  bucket = var.trail_bucket_name

  queue {
    queue_arn     = aws_sqs_queue.events.arn
    events        = ["s3:ObjectCreated:*"]
    filter_prefix = var.trail_prefix
  }

  depends_on = [aws_sqs_queue_policy.events]
}
