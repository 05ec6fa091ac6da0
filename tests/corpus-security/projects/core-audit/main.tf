data "aws_caller_identity" "current" {}

data "aws_region" "current" {}

locals {
  account_id = data.aws_caller_identity.current.account_id
  region     = data.aws_region.current.name
  name       = "${var.org}-${var.environment}"

  trail_name       = "${local.name}-audit"
  trail_bucket     = "${local.name}-cloudtrail-${local.account_id}"
  trail_log_group  = "/aws/cloudtrail/${local.trail_name}"
  account_root_arn = "arn:aws:iam::${local.account_id}:root"

  tags = {
    Environment = var.environment
    Stack       = "security-baseline"
    ManagedBy   = "terraform"
    Owner       = "cloud-security"
  }
}
