resource "aws_sns_topic" "alerts" {
  name = "platform-alerts"
}

resource "aws_sns_topic_subscription" "oncall" {
  topic_arn = aws_sns_topic.alerts.arn
  protocol  = "https"
  endpoint  = "https://oncall.example.com/hooks/platform"
}

resource "aws_lambda_permission" "alerts" {
  statement_id  = "AllowAlertsTopic"
  action        = "lambda:InvokeFunction"
  function_name = "platform-alert-router"
  principal     = "sns.amazonaws.com"
  source_arn    = aws_sns_topic.alerts.arn
}
