resource "aws_secretsmanager_secret" "db" {
  name       = "platform/db"
  kms_key_id = aws_kms_key.data.arn
}

resource "aws_secretsmanager_secret_rotation" "db" {
  secret_id           = aws_secretsmanager_secret.db.id
  rotation_lambda_arn = "arn:aws:lambda:us-east-1:123456789012:function:platform-rotate-db"

  rotation_rules {
    automatically_after_days = var.rotation_days
  }
}
