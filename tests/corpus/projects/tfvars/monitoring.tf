resource "aws_cloudwatch_metric_alarm" "api_cpu_high" {
  alarm_name          = "${local.name_prefix}-api-cpu-high"
  alarm_description   = "Orders API CPU is high"
  namespace           = "AWS/EC2"
  metric_name         = "CPUUtilization"
  statistic           = "Average"
  period              = local.alarm_period_seconds
  evaluation_periods  = local.alarm_evaluation_periods
  threshold           = var.api_cpu_threshold
  comparison_operator = "GreaterThanThreshold"
  alarm_actions       = [aws_sns_topic.alerts.arn]

  dimensions = {
    InstanceId = aws_instance.api.id
  }

  tags = local.tags
}

resource "aws_cloudwatch_metric_alarm" "orders_backlog" {
  alarm_name          = "${local.name_prefix}-orders-backlog"
  alarm_description   = "Orders are waiting in the queue"
  namespace           = "AWS/SQS"
  metric_name         = "ApproximateNumberOfMessagesVisible"
  statistic           = "Maximum"
  period              = local.alarm_period_seconds
  evaluation_periods  = local.alarm_evaluation_periods
  threshold           = 1000
  comparison_operator = "GreaterThanOrEqualToThreshold"
  alarm_actions       = [aws_sns_topic.alerts.arn]

  dimensions = {
    QueueName = aws_sqs_queue.orders.name
  }

  tags = local.tags
}
