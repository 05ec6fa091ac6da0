# CloudWatch alarms on the feed: what reaches the dead-letter queues, a queue nobody drains, and
# deliveries EventBridge fails. They notify var.alarm_actions.

resource "aws_cloudwatch_metric_alarm" "dead_letter_depth" {
  alarm_name          = "${var.name}-dead-letter-depth"
  alarm_description   = "Messages driftback could not take are in ${aws_sqs_queue.dead_letter.name} (docs/operations.md, Poison messages)."
  namespace           = "AWS/SQS"
  metric_name         = "ApproximateNumberOfMessagesVisible"
  dimensions          = { QueueName = aws_sqs_queue.dead_letter.name }
  statistic           = "Maximum"
  period              = 300
  evaluation_periods  = 1
  threshold           = 0
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = var.alarm_actions
  ok_actions          = var.alarm_actions
  tags                = var.tags
}

resource "aws_cloudwatch_metric_alarm" "undelivered_depth" {
  alarm_name          = "${var.name}-undelivered-depth"
  alarm_description   = "EventBridge could not deliver CloudTrail events to ${aws_sqs_queue.events.name}; they wait in ${aws_sqs_queue.undelivered.name} (see their ERROR_CODE attribute)."
  namespace           = "AWS/SQS"
  metric_name         = "ApproximateNumberOfMessagesVisible"
  dimensions          = { QueueName = aws_sqs_queue.undelivered.name }
  statistic           = "Maximum"
  period              = 300
  evaluation_periods  = 1
  threshold           = 0
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = var.alarm_actions
  ok_actions          = var.alarm_actions
  tags                = var.tags
}

resource "aws_cloudwatch_metric_alarm" "oldest_message_age" {
  alarm_name          = "${var.name}-oldest-message-age"
  alarm_description   = "The oldest message in ${aws_sqs_queue.events.name} is older than ${var.queue_age_alarm_seconds} s: driftback is down or behind."
  namespace           = "AWS/SQS"
  metric_name         = "ApproximateAgeOfOldestMessage"
  dimensions          = { QueueName = aws_sqs_queue.events.name }
  statistic           = "Maximum"
  period              = 300
  evaluation_periods  = 2
  threshold           = var.queue_age_alarm_seconds
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = var.alarm_actions
  ok_actions          = var.alarm_actions
  tags                = var.tags
}

resource "aws_cloudwatch_metric_alarm" "failed_invocations" {
  alarm_name          = "${var.name}-rule-failed-invocations"
  alarm_description   = "EventBridge failed to deliver events of ${aws_cloudwatch_event_rule.cloudtrail.name} to the queue (retried; see the undelivered queue)."
  namespace           = "AWS/Events"
  metric_name         = "FailedInvocations"
  dimensions          = { RuleName = aws_cloudwatch_event_rule.cloudtrail.name }
  statistic           = "Sum"
  period              = 300
  evaluation_periods  = 1
  threshold           = 0
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = var.alarm_actions
  ok_actions          = var.alarm_actions
  tags                = var.tags
}
