locals {
  create = var.create && var.create_function
}

resource "aws_lambda_function" "this" {
  count = local.create ? 1 : 0

  function_name = var.function_name
  description   = var.description
  role          = var.lambda_role
  handler       = var.handler
  runtime       = var.runtime
  memory_size   = var.memory_size
  timeout       = var.timeout
  architectures = var.architectures
  publish       = var.publish

  s3_bucket = var.s3_existing_package["bucket"]
  s3_key    = var.s3_existing_package["key"]

  dynamic "environment" {
    for_each = length(keys(var.environment_variables)) == 0 ? [] : [true]
    content {
      variables = var.environment_variables
    }
  }

  dynamic "tracing_config" {
    for_each = var.tracing_mode == null ? [] : [true]
    content {
      mode = var.tracing_mode
    }
  }

  tags = merge(var.tags, var.function_tags)

  depends_on = [aws_cloudwatch_log_group.lambda]
}

resource "aws_cloudwatch_log_group" "lambda" {
  count = local.create && var.use_existing_cloudwatch_log_group == false ? 1 : 0

  name              = "/aws/lambda/${var.function_name}"
  retention_in_days = var.cloudwatch_logs_retention_in_days
  kms_key_id        = var.cloudwatch_logs_kms_key_id

  tags = merge(var.tags, var.cloudwatch_logs_tags)
}
