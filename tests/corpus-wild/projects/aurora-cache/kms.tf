resource "aws_kms_key" "data" {
  description             = "Encrypts the shop data tier: Aurora storage, Redis at rest, secrets"
  deletion_window_in_days = 30
  enable_key_rotation     = true

  tags = merge(local.tags, { Name = "${local.name_prefix}-data" })
}

resource "aws_sns_topic" "data_alerts" {
  name              = "${local.name_prefix}-data-alerts"
  kms_master_key_id = "alias/aws/sns"
  tags              = local.tags
}
