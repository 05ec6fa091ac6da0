data "aws_caller_identity" "current" {}

resource "aws_kms_key" "data" {
  description             = "platform data key"
  deletion_window_in_days = 30
  enable_key_rotation     = true

  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [
      {
        Sid       = "AccountAdmin"
        Effect    = "Allow"
        Principal = { AWS = "arn:aws:iam::123456789012:root" }
        Action    = "kms:*"
        Resource  = "*"
      },
    ]
  })
}

resource "aws_kms_alias" "data" {
  name          = "alias/platform-data"
  target_key_id = aws_kms_key.data.key_id
}

resource "aws_kms_key" "backups" {
  description             = "platform backup key"
  deletion_window_in_days = 30
  enable_key_rotation     = false
}
