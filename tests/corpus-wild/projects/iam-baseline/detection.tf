resource "aws_s3_account_public_access_block" "this" {
  block_public_acls       = true
  block_public_policy     = true
  ignore_public_acls      = true
  restrict_public_buckets = true
}

resource "aws_ebs_encryption_by_default" "this" {
  enabled = true
}

resource "aws_guardduty_detector" "this" {
  count = var.guardduty_enabled ? 1 : 0

  enable                       = true
  finding_publishing_frequency = var.guardduty_finding_frequency
  tags                         = local.tags
}

resource "aws_guardduty_detector_feature" "this" {
  for_each = var.guardduty_enabled ? var.guardduty_features : {}

  detector_id = aws_guardduty_detector.this[0].id
  name        = each.key
  status      = each.value
}
