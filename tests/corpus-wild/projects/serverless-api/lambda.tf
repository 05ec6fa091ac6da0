module "lambda" {
  source   = "./modules/lambda-function"
  for_each = var.functions

  function_name = format("%s-%s", local.name_prefix, each.key)
  description   = each.value.description
  handler       = each.value.handler
  runtime       = each.value.runtime
  memory_size   = each.value.memory_size
  timeout       = each.value.timeout

  reserved_concurrent_executions = each.value.reserved_concurrency

  s3_bucket    = var.artifacts_bucket
  s3_key       = "${each.key}/${var.release}.zip"
  tracing_mode = var.tracing_mode

  environment_variables = merge(local.lambda_environment, { POWERTOOLS_SERVICE_NAME = each.key }, each.value.environment)

  cloudwatch_logs_retention_in_days = coalesce(each.value.log_retention_days, var.default_log_retention_days)

  attach_policy_json = true
  policy_json        = local.lambda_policy_json

  tags          = merge(local.tags, each.value.tags)
  function_tags = each.value.function_tags
}

locals {
  lambda_policy_json = jsonencode({
    Version = "2012-10-17"
    Statement = [
      {
        Sid      = "Tables"
        Effect   = "Allow"
        Action   = ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:Query", "dynamodb:BatchWriteItem"]
        Resource = ["arn:aws:dynamodb:*:*:table/${local.name_prefix}-*"]
      },
      {
        Sid      = "Queues"
        Effect   = "Allow"
        Action   = ["sqs:SendMessage", "sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility", "sqs:GetQueueAttributes"]
        Resource = ["arn:aws:sqs:*:*:${local.name_prefix}-*"]
      },
    ]
  })
}

resource "aws_lambda_permission" "api" {
  for_each = local.api_functions

  statement_id  = "AllowHttpApiInvoke"
  action        = "lambda:InvokeFunction"
  function_name = module.lambda[each.key].lambda_function_name
  principal     = "apigateway.amazonaws.com"
  source_arn    = "${aws_apigatewayv2_api.this.execution_arn}/*/*"
}

resource "aws_lambda_event_source_mapping" "sqs" {
  for_each = local.queue_consumers

  event_source_arn                   = aws_sqs_queue.this[each.key].arn
  function_name                      = module.lambda[each.value.consumer].lambda_function_arn
  batch_size                         = each.value.batch_size
  maximum_batching_window_in_seconds = each.value.batching_window
  function_response_types            = ["ReportBatchItemFailures"]
}
