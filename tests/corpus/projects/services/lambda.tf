# Lambda functions. Packages are uploaded to the artifacts bucket by CI.

resource "aws_lambda_function" "order_processor" {
  function_name = "order-processor"
  description   = "Consumes orders-queue and records orders in DynamoDB"
  role          = aws_iam_role.order_processor.arn
  runtime       = "python3.12"
  handler       = "app.handler"
  architectures = ["arm64"]
  s3_bucket     = var.artifacts_bucket
  s3_key        = "lambda/order-processor/1.8.3.zip"
  memory_size   = var.order_processor_memory
  timeout       = 30

  environment {
    variables = {
      TABLE_NAME              = aws_dynamodb_table.orders.name
      EVENTS_TOPIC_ARN        = aws_sns_topic.order_events.arn
      LOG_LEVEL               = "INFO"
      POWERTOOLS_SERVICE_NAME = "order-processor"
    }
  }

  tracing_config {
    mode = "Active"
  }

  tags = merge(local.common_tags, { Name = "order-processor" })

  depends_on = [aws_cloudwatch_log_group.order_processor]
}

resource "aws_lambda_event_source_mapping" "orders" {
  event_source_arn                   = aws_sqs_queue.orders.arn
  function_name                      = aws_lambda_function.order_processor.arn
  batch_size                         = 10
  maximum_batching_window_in_seconds = 5
  function_response_types            = ["ReportBatchItemFailures"]
}

resource "aws_lambda_function" "report_generator" {
  function_name = "report-generator"
  description   = "Builds the nightly order reports"
  role          = aws_iam_role.report_generator.arn
  runtime       = "python3.12"
  handler       = "reports.handler"
  s3_bucket     = var.artifacts_bucket
  s3_key        = "lambda/report-generator/2.1.0.zip"
  memory_size   = 512
  timeout       = 120

  environment {
    variables = {
      TABLE_NAME    = aws_dynamodb_table.orders.name
      REPORT_BUCKET = var.reports_bucket
      LOG_LEVEL     = "WARN"
    }
  }

  tags = merge(local.common_tags, { Name = "report-generator" })

  depends_on = [aws_cloudwatch_log_group.report_generator]
}

resource "aws_lambda_function" "legacy_webhook" {
  function_name = "legacy-webhook"
  description   = "v1 partner webhook, kept until partners move to order-events"
  role          = aws_iam_role.legacy_webhook.arn
  runtime       = "nodejs18.x"
  handler       = "index.handler"
  s3_bucket     = var.artifacts_bucket
  s3_key        = "lambda/legacy-webhook/0.9.12.zip"
  memory_size   = 128
  timeout       = 10

  tags = merge(local.common_tags, { Name = "legacy-webhook" })
}
