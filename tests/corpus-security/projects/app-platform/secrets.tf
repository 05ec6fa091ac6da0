resource "aws_secretsmanager_secret" "db" {
  name        = "${var.project}/${var.environment}/orders-db"
  description = "Application credentials for the orders PostgreSQL database"
  kms_key_id  = aws_kms_key.platform.arn

  tags = local.common_tags
}

resource "aws_secretsmanager_secret_rotation" "db" {
  secret_id           = aws_secretsmanager_secret.db.id
  rotation_lambda_arn = var.rotation_lambda_arn

  rotation_rules {
    automatically_after_days = var.secret_rotation_days
  }
}
