locals {
  metric_name = join("", [for w in split("-", var.name) : title(w)])
}

resource "aws_cloudwatch_log_metric_filter" "this" {
  name           = "cis-${var.name}"
  log_group_name = var.log_group_name
  pattern        = var.pattern

  metric_transformation {
    name      = local.metric_name
    namespace = var.namespace
    value     = "1"
  }
}

resource "aws_cloudwatch_metric_alarm" "this" {
  alarm_name          = "${var.name_prefix}-cis-${var.name}"
  alarm_description   = var.description
  namespace           = var.namespace
  metric_name         = local.metric_name
  statistic           = "Sum"
  period              = var.period
  evaluation_periods  = 1
  threshold           = var.threshold
  comparison_operator = "GreaterThanOrEqualToThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = var.alarm_actions

  depends_on = [aws_cloudwatch_log_metric_filter.this]
}
