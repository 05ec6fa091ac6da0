output "lambda_function_name" {
  description = "The name of the Lambda function"
  value       = try(aws_lambda_function.this[0].function_name, null)
}

output "lambda_function_arn" {
  description = "The ARN of the Lambda function"
  value       = try(aws_lambda_function.this[0].arn, null)
}

output "lambda_role_name" {
  description = "The name of the function's IAM role"
  value       = try(aws_iam_role.lambda[0].name, null)
}

output "log_group_name" {
  description = "The name of the function's log group"
  value       = try(aws_cloudwatch_log_group.lambda[0].name, null)
}
