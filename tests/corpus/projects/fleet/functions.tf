resource "aws_iam_role" "lambda" {
  name = "${local.name_prefix}-lambda"

  assume_role_policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Effect    = "Allow"
      Principal = { Service = "lambda.amazonaws.com" }
      Action    = "sts:AssumeRole"
    }]
  })

  tags = local.common_tags
}

resource "aws_iam_role_policy_attachment" "lambda_basic" {
  role       = aws_iam_role.lambda.name
  policy_arn = "arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"
}

resource "aws_lambda_function" "handler" {
  for_each = var.functions

  function_name = "${local.name_prefix}-${each.key}"
  role          = aws_iam_role.lambda.arn
  runtime       = "python3.12"
  handler       = each.value.handler
  s3_bucket     = "acme-fleet-artifacts"
  s3_key        = "lambda/${each.key}.zip"
  memory_size   = each.value.memory_size
  timeout       = each.value.timeout

  environment {
    variables = {
      STAGE     = var.environment
      LOG_LEVEL = "INFO"
    }
  }

  tags = merge(local.common_tags, { Function = each.key })
}
