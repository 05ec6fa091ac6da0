locals {
  key_admin_statement = {
    Sid       = "AccountAdministration"
    Effect    = "Allow"
    Principal = { AWS = local.account_root_arn }
    Action    = "kms:*"
    Resource  = "*"
  }

  key_service_statements = {
    cloudtrail = [
      {
        Sid       = "CloudTrailEncryptLogs"
        Effect    = "Allow"
        Principal = { Service = "cloudtrail.amazonaws.com" }
        Action    = "kms:GenerateDataKey*"
        Resource  = "*"
        Condition = {
          StringLike = { "kms:EncryptionContext:aws:cloudtrail:arn" = "arn:aws:cloudtrail:*:${local.account_id}:trail/*" }
        }
      },
    ]
    logs = [
      {
        Sid       = "CloudWatchLogs"
        Effect    = "Allow"
        Principal = { Service = "logs.${local.region}.amazonaws.com" }
        Action    = ["kms:Encrypt*", "kms:Decrypt*", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:Describe*"]
        Resource  = "*"
      },
    ]
  }
}

resource "aws_kms_key" "this" {
  for_each = var.kms_keys

  description             = each.value.description
  enable_key_rotation     = each.value.rotation
  deletion_window_in_days = 30

  policy = jsonencode({
    Version   = "2012-10-17"
    Statement = concat([local.key_admin_statement], lookup(local.key_service_statements, each.key, []))
  })

  tags = {
    Purpose = each.key
  }
}

resource "aws_kms_alias" "this" {
  for_each = var.kms_keys

  name          = "alias/${local.name}-${each.key}"
  target_key_id = aws_kms_key.this[each.key].key_id
}
