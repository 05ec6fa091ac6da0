output "lambda_function_arn" {
  value = try(aws_lambda_function.this[0].arn, "")
}

output "lambda_function_name" {
  value = try(aws_lambda_function.this[0].function_name, "")
}
