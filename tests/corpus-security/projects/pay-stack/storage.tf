resource "aws_s3_bucket" "logs" {
  bucket = "${local.name}-access-logs-${var.account_id}"
}

resource "aws_s3_bucket" "this" {
  for_each = var.buckets

  bucket = local.bucket_names[each.key]
  tags   = { Purpose = each.value.purpose }
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
      sse_algorithm     = "aws:kms"
      kms_master_key_id = aws_kms_key.data.arn
    }
    bucket_key_enabled = true
  }
}

resource "aws_s3_bucket_public_access_block" "this" {
  for_each = var.buckets

  bucket                  = aws_s3_bucket.this[each.key].id
  block_public_acls       = true
  block_public_policy     = true
  ignore_public_acls      = true
  restrict_public_buckets = true
}

resource "aws_s3_bucket_policy" "this" {
  for_each = var.buckets

  bucket = aws_s3_bucket.this[each.key].id
  policy = local.bucket_policies[each.key]
}

resource "aws_s3_bucket_logging" "this" {
  for_each = { for key, bucket in var.buckets : key => bucket if bucket.access_logs }

  bucket        = aws_s3_bucket.this[each.key].id
  target_bucket = aws_s3_bucket.logs.id
  target_prefix = "${each.key}/"
}

resource "aws_s3_bucket_lifecycle_configuration" "this" {
  for_each = var.buckets

  bucket = aws_s3_bucket.this[each.key].id

  rule {
    id     = "noncurrent"
    status = "Enabled"
    filter {}
    noncurrent_version_expiration {
      noncurrent_days = each.value.noncurrent_days
    }
  }

  dynamic "rule" {
    for_each = each.value.expire_days == null ? {} : { expire = each.value.expire_days }
    content {
      id     = rule.key
      status = "Enabled"
      filter {}
      expiration {
        days = rule.value
      }
      dynamic "transition" {
        for_each = each.value.transitions
        content {
          storage_class = transition.key
          days          = transition.value
        }
      }
    }
  }
}
