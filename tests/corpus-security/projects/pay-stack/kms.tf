resource "aws_kms_key" "data" {
  description             = "pay-stack data at rest"
  enable_key_rotation     = true
  deletion_window_in_days = 30
  policy                  = local.key_policy
}

resource "aws_kms_alias" "data" {
  name          = "alias/${local.name}-data"
  target_key_id = aws_kms_key.data.key_id
}
