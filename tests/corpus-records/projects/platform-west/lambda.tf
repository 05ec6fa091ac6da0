resource "aws_iam_role" "lambda" {
  name = "lambda-exec"

  assume_role_policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Effect    = "Allow"
      Principal = { Service = "lambda.amazonaws.com" }
      Action    = "sts:AssumeRole"
    }]
  })
}

resource "aws_lambda_function" "api" {
  function_name = "production-api"
  role          = aws_iam_role.lambda.arn
  runtime       = "python3.12"
  handler       = "app.handler"
  filename      = "${path.module}/build/api.zip"
  memory_size   = 512
  timeout       = 15
  layers        = var.api_layers
}

resource "aws_lambda_function" "worker" {
  function_name = "my-lambda-function"
  role          = aws_iam_role.lambda.arn
  runtime       = "python3.12"
  handler       = "worker.handler"
  filename      = "${path.module}/build/worker.zip"
  timeout       = 60
}

resource "aws_lambda_permission" "worker_s3" {
  statement_id   = "AllowS3Invoke"
  action         = "lambda:InvokeFunction"
  function_name  = aws_lambda_function.worker.function_name
  principal      = "s3.amazonaws.com"
  source_arn     = aws_s3_bucket.example.arn
  source_account = "123456789012"
}

resource "aws_iam_role" "new_role" {
  name = "new-role"

  assume_role_policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Effect    = "Allow"
      Principal = { Service = "ec2.amazonaws.com" }
      Action    = "sts:AssumeRole"
    }]
  })
}
