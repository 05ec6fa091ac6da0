# SQS queues of the order pipeline.

resource "aws_sqs_queue" "orders_dlq" {
  name                      = "orders-dlq"
  message_retention_seconds = 1209600
  sqs_managed_sse_enabled   = true

  tags = merge(local.common_tags, { Name = "orders-dlq" })
}

resource "aws_sqs_queue" "orders" {
  name                       = "orders-queue"
  visibility_timeout_seconds = 180 # 6x the order-processor timeout
  message_retention_seconds  = 345600
  delay_seconds              = 0
  receive_wait_time_seconds  = 20
  sqs_managed_sse_enabled    = true

  redrive_policy = jsonencode({
    deadLetterTargetArn = aws_sqs_queue.orders_dlq.arn
    maxReceiveCount     = 5
  })

  tags = merge(local.common_tags, { Name = "orders-queue" })
}

resource "aws_sqs_queue" "notifications" {
  name                       = "notifications-queue"
  visibility_timeout_seconds = 60
  message_retention_seconds  = 86400
  receive_wait_time_seconds  = 10
  sqs_managed_sse_enabled    = true

  tags = merge(local.common_tags, { Name = "notifications-queue" })
}

resource "aws_sqs_queue_policy" "notifications" {
  queue_url = aws_sqs_queue.notifications.id

  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [
      {
        Sid       = "AllowOrderEventsTopic"
        Effect    = "Allow"
        Principal = { Service = "sns.amazonaws.com" }
        Action    = "sqs:SendMessage"
        Resource  = aws_sqs_queue.notifications.arn
        Condition = {
          ArnEquals = { "aws:SourceArn" = aws_sns_topic.order_events.arn }
        }
      }
    ]
  })
}

# Fed by the v1 monolith; remove once the last v1 consumer is gone.
resource "aws_sqs_queue" "legacy_events" {
  name                       = "legacy-events-queue"
  visibility_timeout_seconds = 30
  message_retention_seconds  = 345600

  tags = merge(local.common_tags, { Name = "legacy-events-queue" })
}

# One-off queue for the 2023 orders backfill.
resource "aws_sqs_queue" "migration_backfill" {
  name                       = "migration-backfill-queue"
  visibility_timeout_seconds = 300
  message_retention_seconds  = 604800

  tags = merge(local.common_tags, { Name = "migration-backfill-queue" })
}
