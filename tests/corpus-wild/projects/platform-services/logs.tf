resource "aws_cloudwatch_log_group" "service" {
  for_each = var.log_groups

  name              = "/platform/${each.key}"
  retention_in_days = var.log_retention_days
  kms_key_id        = aws_kms_key.data.arn
}

resource "aws_cloudwatch_log_group" "legacy" {
  name              = "/platform/legacy-batch"
  retention_in_days = 14
}
