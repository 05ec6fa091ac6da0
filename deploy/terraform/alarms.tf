# CloudWatch alarms on the feed: what reaches the dead-letter queues, a queue nobody drains, and
# deliveries EventBridge fails. They notify var.alarm_actions.
#
# One alarm per entry, named "${var.name}-KEY": the metric, the one dimension it is measured on,
# the statistic, and the threshold it must stay at or under. The rest is common to all.

locals {
  alarms = {
    dead-letter-depth = {
      description        = "Messages driftback could not take are in ${aws_sqs_queue.dead_letter.name} (docs/operations.md, Poison messages)."
      namespace          = "AWS/SQS"
      metric_name        = "ApproximateNumberOfMessagesVisible"
      dimension          = "QueueName"
      subject            = aws_sqs_queue.dead_letter.name
      statistic          = "Maximum"
      evaluation_periods = 1
      threshold          = 0
    }
    undelivered-depth = {
      description        = "EventBridge could not deliver CloudTrail events to ${aws_sqs_queue.events.name}; they wait in ${aws_sqs_queue.undelivered.name} (see their ERROR_CODE attribute)."
      namespace          = "AWS/SQS"
      metric_name        = "ApproximateNumberOfMessagesVisible"
      dimension          = "QueueName"
      subject            = aws_sqs_queue.undelivered.name
      statistic          = "Maximum"
      evaluation_periods = 1
      threshold          = 0
    }
    oldest-message-age = {
      description        = "The oldest message in ${aws_sqs_queue.events.name} is older than ${var.queue_age_alarm_seconds} s: driftback is down or behind."
      namespace          = "AWS/SQS"
      metric_name        = "ApproximateAgeOfOldestMessage"
      dimension          = "QueueName"
      subject            = aws_sqs_queue.events.name
      statistic          = "Maximum"
      evaluation_periods = 2
      threshold          = var.queue_age_alarm_seconds
    }
    rule-failed-invocations = {
      description        = "EventBridge failed to deliver events of ${aws_cloudwatch_event_rule.cloudtrail.name} to the queue (retried; see the undelivered queue)."
      namespace          = "AWS/Events"
      metric_name        = "FailedInvocations"
      dimension          = "RuleName"
      subject            = aws_cloudwatch_event_rule.cloudtrail.name
      statistic          = "Sum"
      evaluation_periods = 1
      threshold          = 0
    }
  }
}

resource "aws_cloudwatch_metric_alarm" "feed" {
  for_each = local.alarms

  alarm_name          = "${var.name}-${each.key}"
  alarm_description   = each.value.description
  namespace           = each.value.namespace
  metric_name         = each.value.metric_name
  dimensions          = { (each.value.dimension) = each.value.subject }
  statistic           = each.value.statistic
  period              = 300
  evaluation_periods  = each.value.evaluation_periods
  threshold           = each.value.threshold
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = var.alarm_actions
  ok_actions          = var.alarm_actions
  tags                = var.tags
}

# The alarms had a resource each before; an existing deployment keeps them.
moved {
  from = aws_cloudwatch_metric_alarm.dead_letter_depth
  to   = aws_cloudwatch_metric_alarm.feed["dead-letter-depth"]
}

moved {
  from = aws_cloudwatch_metric_alarm.undelivered_depth
  to   = aws_cloudwatch_metric_alarm.feed["undelivered-depth"]
}

moved {
  from = aws_cloudwatch_metric_alarm.oldest_message_age
  to   = aws_cloudwatch_metric_alarm.feed["oldest-message-age"]
}

moved {
  from = aws_cloudwatch_metric_alarm.failed_invocations
  to   = aws_cloudwatch_metric_alarm.feed["rule-failed-invocations"]
}
