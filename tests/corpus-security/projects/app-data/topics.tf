resource "aws_sns_topic" "order_events" {
  name              = "${var.name_prefix}-order-events"
  kms_master_key_id = aws_kms_key.data.arn

  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [
      {
        Sid       = "AccountPublish"
        Effect    = "Allow"
        Principal = { AWS = "arn:aws:iam::${local.account_id}:root" }
        Action    = ["sns:Publish", "sns:Subscribe", "sns:GetTopicAttributes"]
        Resource  = "arn:aws:sns:${var.region}:${local.account_id}:${var.name_prefix}-order-events"
      },
      {
        Sid       = "EventBridgePublish"
        Effect    = "Allow"
        Principal = { Service = "events.amazonaws.com" }
        Action    = "sns:Publish"
        Resource  = "arn:aws:sns:${var.region}:${local.account_id}:${var.name_prefix}-order-events"
        Condition = {
          StringEquals = { "aws:SourceAccount" = local.account_id }
        }
      },
    ]
  })

  tags = local.tags
}

resource "aws_sns_topic_subscription" "shipment_updates" {
  topic_arn            = aws_sns_topic.order_events.arn
  protocol             = "sqs"
  endpoint             = aws_sqs_queue.work["shipment-updates"].arn
  raw_message_delivery = true
}

resource "aws_sns_topic" "alerts" {
  name              = "${var.name_prefix}-alerts"
  display_name      = "Fulfilment alerts"
  kms_master_key_id = "alias/aws/sns"

  tags = local.tags
}

resource "aws_sns_topic_subscription" "alerts_email" {
  topic_arn = aws_sns_topic.alerts.arn
  protocol  = "email"
  endpoint  = var.alert_email
}

# CI build notices for the team channel; carries no customer data.
resource "aws_sns_topic" "build_notices" {
  name = "${var.name_prefix}-build-notices"

  tags = local.tags
}
