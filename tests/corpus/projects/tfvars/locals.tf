locals {
  name_prefix = "${var.project}-${var.environment}"

  tags = merge(var.common_tags, {
    Project     = var.project
    Environment = var.environment
    ManagedBy   = "terraform"
  })

  # Both alarms page after the same number of breaching periods.
  alarm_evaluation_periods = 3
  alarm_period_seconds     = 300

  # Producers delay new messages a little so consumers can batch them.
  queue_delay_seconds = 5

  bastion_instance_type = "t3.micro"
}
