resource "aws_iam_role" "lambda" {
  count = var.create ? 1 : 0

  name = var.function_name
  assume_role_policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Effect    = "Allow"
      Action    = "sts:AssumeRole"
      Principal = { Service = "lambda.amazonaws.com" }
    }]
  })

  tags = var.tags
}

resource "aws_iam_role_policy_attachment" "logs" {
  count = var.create ? 1 : 0

  role       = aws_iam_role.lambda[0].name
  policy_arn = "arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"
}

resource "aws_iam_role_policy" "inline" {
  count = var.create && var.attach_policy_json ? 1 : 0

  name   = var.function_name
  role   = aws_iam_role.lambda[0].id
  policy = var.policy_json
}

resource "aws_cloudwatch_log_group" "lambda" {
  count = var.create ? 1 : 0

  name              = "/aws/lambda/${var.function_name}"
  retention_in_days = var.cloudwatch_logs_retention_in_days

  tags = var.tags
}

resource "aws_lambda_function" "this" {
  count = var.create ? 1 : 0

  function_name = var.function_name
  description   = var.description
  role          = aws_iam_role.lambda[0].arn
  handler       = var.handler
  runtime       = var.runtime
  architectures = ["arm64"]
  memory_size   = var.memory_size
  timeout       = var.timeout
  s3_bucket     = var.s3_bucket
  s3_key        = var.s3_key

  reserved_concurrent_executions = var.reserved_concurrent_executions

  dynamic "environment" {
    for_each = length(keys(var.environment_variables)) == 0 ? [] : [true]

    content {
      variables = var.environment_variables
    }
  }

  tracing_config {
    mode = var.tracing_mode
  }

  tags = merge(var.tags, var.function_tags)

  depends_on = [
    aws_cloudwatch_log_group.lambda,
    aws_iam_role_policy_attachment.logs,
  ]
}
