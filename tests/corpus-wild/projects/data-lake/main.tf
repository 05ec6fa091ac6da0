locals {
  common_tags = {
    Project     = "datalake"
    Environment = var.environment
    ManagedBy   = "terraform"
  }

  lifecycle_buckets = {
    for name, cfg in var.buckets : name => cfg
    if cfg.noncurrent_days != null || cfg.expiration_days != null
  }
}

resource "aws_s3_bucket" "this" {
  for_each = var.buckets

  bucket = "${var.bucket_prefix}-${var.environment}-${each.key}"

  tags = merge(local.common_tags, { Name = each.key }, each.value.tags)
}

resource "aws_s3_bucket_versioning" "this" {
  for_each = var.buckets

  bucket = aws_s3_bucket.this[each.key].id

  versioning_configuration {
    status = each.value.versioning ? "Enabled" : "Suspended"
  }
}

resource "aws_s3_bucket_server_side_encryption_configuration" "this" {
  for_each = var.buckets

  bucket = aws_s3_bucket.this[each.key].id

  rule {
    apply_server_side_encryption_by_default {
      sse_algorithm     = each.value.kms_key_arn == null ? "AES256" : "aws:kms"
      kms_master_key_id = each.value.kms_key_arn
    }
    bucket_key_enabled = each.value.kms_key_arn != null
  }
}

resource "aws_s3_bucket_public_access_block" "this" {
  for_each = var.buckets

  bucket = aws_s3_bucket.this[each.key].id

  block_public_acls       = true
  block_public_policy     = true
  ignore_public_acls      = true
  restrict_public_buckets = true
}

resource "aws_s3_bucket_lifecycle_configuration" "this" {
  for_each = local.lifecycle_buckets

  bucket = aws_s3_bucket.this[each.key].id

  dynamic "rule" {
    for_each = each.value.noncurrent_days == null ? [] : [each.value.noncurrent_days]

    content {
      id     = "expire-noncurrent-versions"
      status = "Enabled"

      filter {}

      noncurrent_version_expiration {
        noncurrent_days = rule.value
      }
    }
  }

  dynamic "rule" {
    for_each = each.value.expiration_days == null ? [] : [each.value.expiration_days]

    content {
      id     = "expire-objects"
      status = "Enabled"

      filter {}

      expiration {
        days = rule.value
      }
    }
  }

  depends_on = [aws_s3_bucket_versioning.this]
}
