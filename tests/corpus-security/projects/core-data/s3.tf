# Ledger buckets: one set of split resources per entry of var.buckets.

resource "aws_s3_bucket" "this" {
  for_each = var.buckets

  bucket = "${local.name}-${each.key}"

  tags = {
    DataClass = each.value.data_class
  }
}

resource "aws_s3_bucket_versioning" "this" {
  for_each = var.buckets

  bucket = aws_s3_bucket.this[each.key].id

  versioning_configuration {
    status     = each.value.versioning
    mfa_delete = each.value.mfa_delete
  }
}

resource "aws_s3_bucket_server_side_encryption_configuration" "this" {
  for_each = var.buckets

  bucket = aws_s3_bucket.this[each.key].id

  rule {
    apply_server_side_encryption_by_default {
      sse_algorithm     = each.value.sse_algorithm
      kms_master_key_id = each.value.sse_algorithm == "aws:kms" ? var.data_kms_key_arn : null
    }
    bucket_key_enabled = each.value.sse_algorithm == "aws:kms"
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

# Security Hub S3.5: every request must use TLS.
resource "aws_s3_bucket_policy" "documents" {
  bucket = aws_s3_bucket.this["documents"].id

  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [
      {
        Sid       = "DenyInsecureTransport"
        Effect    = "Deny"
        Principal = "*"
        Action    = "s3:*"
        Resource = [
          aws_s3_bucket.this["documents"].arn,
          "${aws_s3_bucket.this["documents"].arn}/*",
        ]
        Condition = {
          Bool = { "aws:SecureTransport" = "false" }
        }
      },
      {
        Sid       = "DenyOutdatedTls"
        Effect    = "Deny"
        Principal = "*"
        Action    = "s3:*"
        Resource = [
          aws_s3_bucket.this["documents"].arn,
          "${aws_s3_bucket.this["documents"].arn}/*",
        ]
        Condition = {
          NumericLessThan = { "s3:TlsVersion" = "1.2" }
        }
      },
    ]
  })
}

resource "aws_s3_bucket_policy" "exports" {
  bucket = aws_s3_bucket.this["exports"].id

  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [
      {
        Sid       = "DenyInsecureTransport"
        Effect    = "Deny"
        Principal = "*"
        Action    = "s3:*"
        Resource = [
          aws_s3_bucket.this["exports"].arn,
          "${aws_s3_bucket.this["exports"].arn}/*",
        ]
        Condition = {
          Bool = { "aws:SecureTransport" = "false" }
        }
      },
      {
        Sid       = "PartnerReadDailyExports"
        Effect    = "Allow"
        Principal = { AWS = var.partner_reader_role_arn }
        Action    = ["s3:GetObject", "s3:ListBucket"]
        Resource = [
          aws_s3_bucket.this["exports"].arn,
          "${aws_s3_bucket.this["exports"].arn}/daily/*",
        ]
      },
    ]
  })
}
