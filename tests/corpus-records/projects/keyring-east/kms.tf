resource "aws_kms_key" "this" {
  for_each = var.kms_keys

  description              = each.value.description
  key_usage                = each.value.key_usage
  customer_master_key_spec = each.value.key_spec
  enable_key_rotation      = each.value.rotation
  multi_region             = each.value.multi_region
  is_enabled               = each.value.enabled
  deletion_window_in_days  = var.deletion_window_in_days

  policy = jsonencode({
    Version = "2012-10-17"
    Id      = "key-default-1"
    Statement = [
      {
        Sid       = "Enable IAM User Permissions"
        Effect    = "Allow"
        Principal = { AWS = "arn:aws:iam::${local.account_id}:root" }
        Action    = "kms:*"
        Resource  = "*"
      },
      {
        Sid       = "Allow use by the application role"
        Effect    = "Allow"
        Principal = { AWS = "arn:aws:iam::${local.account_id}:role/app-runtime" }
        Action    = ["kms:Decrypt", "kms:GenerateDataKey*"]
        Resource  = "*"
      },
    ]
  })

  tags = each.value.tags
}

resource "aws_kms_alias" "this" {
  for_each = local.aliases

  name          = "alias/${each.key}"
  target_key_id = aws_kms_key.this[each.value].key_id
}
