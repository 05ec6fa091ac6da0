resource "aws_iam_role" "worker" {
  name = "${local.name_prefix}-order-worker"

  assume_role_policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Effect    = "Allow"
      Principal = { Service = "lambda.amazonaws.com" }
      Action    = "sts:AssumeRole"
    }]
  })

  tags = local.tags
}

resource "aws_iam_role_policy_attachment" "worker_sqs" {
  role       = aws_iam_role.worker.name
  policy_arn = "arn:aws:iam::aws:policy/service-role/AWSLambdaSQSQueueExecutionRole"
}

resource "aws_lambda_function" "order_worker" {
  function_name = "${local.name_prefix}-order-worker"
  role          = aws_iam_role.worker.arn
  runtime       = "python3.12"
  handler       = "worker.handler"
  s3_bucket     = aws_s3_bucket.artifacts.id
  s3_key        = "order-worker/order-worker-2.3.0.zip"
  memory_size   = var.worker_memory_mb
  timeout       = var.worker_timeout

  environment {
    variables = {
      LOG_LEVEL = var.log_level
      QUEUE_URL = aws_sqs_queue.orders.url
      STAGE     = var.environment
    }
  }

  tags = local.tags
}

resource "aws_lambda_event_source_mapping" "orders" {
  event_source_arn = aws_sqs_queue.orders.arn
  function_name    = aws_lambda_function.order_worker.arn
  batch_size       = 10
}

resource "aws_lambda_function" "report_builder" {
  function_name = "${local.name_prefix}-report-builder"
  role          = aws_iam_role.worker.arn
  runtime       = "python3.12"
  handler       = "reports.handler"
  s3_bucket     = aws_s3_bucket.artifacts.id
  s3_key        = "report-builder/report-builder-0.9.1.zip"
  memory_size   = 256
  timeout       = 120

  environment {
    variables = {
      REPORTS_BUCKET = aws_s3_bucket.reports.bucket
      STAGE          = var.environment
    }
  }

  tags = local.tags
}
