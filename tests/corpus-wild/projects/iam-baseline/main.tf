data "aws_caller_identity" "current" {}
data "aws_region" "current" {}
data "aws_partition" "current" {}

locals {
  account_id = data.aws_caller_identity.current.account_id
  region     = data.aws_region.current.name
  partition  = data.aws_partition.current.partition

  name             = "${var.org}-${var.environment}"
  account_root_arn = "arn:${local.partition}:iam::${local.account_id}:root"

  trail_name      = "${local.name}-audit"
  trail_arn       = "arn:${local.partition}:cloudtrail:${local.region}:${local.account_id}:trail/${local.trail_name}"
  log_bucket_name = "${local.name}-audit-logs-${local.account_id}"

  config = {
    recorder_name      = "default"
    s3_key_prefix      = "config"
    delivery_frequency = "TwentyFour_Hours"
  }

  tags = merge(var.tags, {
    Environment = var.environment
    ManagedBy   = "terraform"
    Stack       = "security-baseline"
  })
}
