resource "aws_efs_file_system" "labels" {
  creation_token   = "${var.name_prefix}-labels"
  encrypted        = true
  kms_key_id       = aws_kms_key.data.arn
  performance_mode = "generalPurpose"
  throughput_mode  = "bursting"

  lifecycle_policy {
    transition_to_ia = "AFTER_30_DAYS"
  }

  tags = merge(local.tags, { Name = "${var.name_prefix}-labels" })
}

resource "aws_efs_backup_policy" "labels" {
  file_system_id = aws_efs_file_system.labels.id

  backup_policy {
    status = "ENABLED"
  }
}

resource "aws_efs_file_system_policy" "labels" {
  file_system_id = aws_efs_file_system.labels.id
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Sid       = "DenyInsecureTransport"
      Effect    = "Deny"
      Principal = { AWS = "*" }
      Action    = "*"
      Resource  = aws_efs_file_system.labels.arn
      Condition = {
        Bool = { "aws:SecureTransport" = "false" }
      }
    }]
  })
}

resource "aws_efs_mount_target" "labels" {
  for_each = toset(var.data_subnet_ids)

  file_system_id  = aws_efs_file_system.labels.id
  subnet_id       = each.value
  security_groups = [var.security_group_ids["efs"]]
}
