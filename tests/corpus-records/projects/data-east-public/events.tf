resource "aws_cloudwatch_event_rule" "ec2_state" {
  name        = "cttest2"
  description = ""

  event_pattern = jsonencode({
    source      = ["aws.ec2"]
    detail-type = ["EC2 Instance Launch Successful"]
  })
}

resource "aws_cloudwatch_event_target" "ec2_state" {
  rule = aws_cloudwatch_event_rule.ec2_state.name
  arn  = var.alarm_topic_arn
}
