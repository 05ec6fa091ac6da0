# SNS topics and their subscriptions.

resource "aws_sns_topic" "order_events" {
  name = "order-events"

  tags = merge(local.common_tags, { Name = "order-events" })
}

resource "aws_sns_topic" "alerts" {
  name         = "ops-alerts"
  display_name = "Ops alerts"

  tags = merge(local.common_tags, { Name = "ops-alerts" })
}

resource "aws_sns_topic" "legacy_notifications" {
  name = "legacy-notifications"

  tags = merge(local.common_tags, { Name = "legacy-notifications" })
}

resource "aws_sns_topic_subscription" "order_events_to_notifications" {
  topic_arn            = aws_sns_topic.order_events.arn
  protocol             = "sqs"
  endpoint             = aws_sqs_queue.notifications.arn
  raw_message_delivery = true
}

resource "aws_sns_topic_subscription" "alerts_email" {
  topic_arn = aws_sns_topic.alerts.arn
  protocol  = "email"
  endpoint  = var.alert_email
}
