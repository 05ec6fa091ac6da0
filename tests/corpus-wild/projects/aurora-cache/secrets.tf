# Credentials of the read-only reporting user of each cluster; the master users'
# passwords are managed by RDS (manage_master_user_password in the module).
resource "aws_secretsmanager_secret" "reporting" {
  for_each = var.reporting_rotation_days

  name                    = "${local.name_prefix}/${each.key}/reporting"
  description             = "Read-only reporting user of the ${each.key} cluster"
  kms_key_id              = aws_kms_key.data.arn
  recovery_window_in_days = 7

  tags = merge(local.tags, { Service = each.key })
}

resource "aws_secretsmanager_secret_rotation" "reporting" {
  for_each = var.reporting_rotation_days

  secret_id           = aws_secretsmanager_secret.reporting[each.key].id
  rotation_lambda_arn = var.rotation_lambda_arn

  rotation_rules {
    automatically_after_days = each.value
  }
}
