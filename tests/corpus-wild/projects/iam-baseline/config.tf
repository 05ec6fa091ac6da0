data "aws_iam_policy_document" "config_assume" {
  statement {
    actions = ["sts:AssumeRole"]

    principals {
      type        = "Service"
      identifiers = ["config.amazonaws.com"]
    }

    condition {
      test     = "StringEquals"
      variable = "aws:SourceAccount"
      values   = [local.account_id]
    }
  }
}

resource "aws_iam_role" "config" {
  name               = "${local.name}-config-recorder"
  assume_role_policy = data.aws_iam_policy_document.config_assume.json
  tags               = local.tags
}

resource "aws_iam_role_policy_attachment" "config" {
  for_each = toset([
    "arn:aws:iam::aws:policy/service-role/AWS_ConfigRole",
  ])

  role       = aws_iam_role.config.name
  policy_arn = each.value
}

resource "aws_config_configuration_recorder" "this" {
  name     = local.config.recorder_name
  role_arn = aws_iam_role.config.arn

  recording_group {
    all_supported                 = true
    include_global_resource_types = true
  }
}

resource "aws_config_delivery_channel" "this" {
  name           = local.config.recorder_name
  s3_bucket_name = aws_s3_bucket.audit_logs.id
  s3_key_prefix  = local.config.s3_key_prefix
  s3_kms_key_arn = aws_kms_key.audit.arn

  snapshot_delivery_properties {
    delivery_frequency = local.config.delivery_frequency
  }

  depends_on = [aws_config_configuration_recorder.this]
}

resource "aws_config_configuration_recorder_status" "this" {
  name       = aws_config_configuration_recorder.this.name
  is_enabled = true

  depends_on = [aws_config_delivery_channel.this]
}
