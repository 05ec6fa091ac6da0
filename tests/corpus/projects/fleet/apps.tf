# Application servers: one instance and one CPU alarm per entry of local.apps.
resource "aws_instance" "app" {
  for_each = local.apps

  ami                     = var.ami_id
  instance_type           = each.value.instance_type
  subnet_id               = var.subnet_ids[0]
  vpc_security_group_ids  = [aws_security_group.apps.id]
  disable_api_termination = each.value.disable_api_termination

  metadata_options {
    http_endpoint = "enabled"
    http_tokens   = "required"
  }

  tags = merge(local.common_tags, each.value.tags, {
    Name = "${local.name_prefix}-${each.key}"
    App  = each.key
  })
}

resource "aws_cloudwatch_metric_alarm" "app_cpu" {
  for_each = local.apps

  alarm_name          = "${local.name_prefix}-${each.key}-cpu-high"
  alarm_description   = "Average CPU of the ${each.key} server is too high"
  comparison_operator = "GreaterThanThreshold"
  evaluation_periods  = 3
  metric_name         = "CPUUtilization"
  namespace           = "AWS/EC2"
  period              = 300
  statistic           = "Average"
  threshold           = each.value.cpu_threshold

  dimensions = {
    InstanceId = aws_instance.app[each.key].id
  }

  tags = local.common_tags
}
