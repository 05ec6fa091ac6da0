resource "aws_iam_role" "webhook" {
  name = "${local.name}-webhook"
  assume_role_policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Effect    = "Allow"
      Principal = { Service = "lambda.amazonaws.com" }
      Action    = "sts:AssumeRole"
    }]
  })
}

resource "aws_lambda_function" "webhook" {
  function_name = "${local.name}-webhook"
  role          = aws_iam_role.webhook.arn
  runtime       = "python3.12"
  handler       = "app.handler"
  filename      = "build/webhook.zip"
  memory_size   = 256
  timeout       = 15

  tracing_config {
    mode = "Active"
  }
}

resource "aws_lambda_function_url" "webhook" {
  function_name      = aws_lambda_function.webhook.function_name
  authorization_type = "AWS_IAM"
}

resource "aws_lambda_permission" "nightly" {
  statement_id  = "NightlyReconcile"
  action        = "lambda:InvokeFunction"
  function_name = aws_lambda_function.webhook.function_name
  principal     = "events.amazonaws.com"
  source_arn    = "arn:aws:events:${var.region}:${var.account_id}:rule/${local.name}-nightly"
}
