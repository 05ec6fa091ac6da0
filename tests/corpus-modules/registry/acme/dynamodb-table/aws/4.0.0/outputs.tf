output "dynamodb_table_arn" {
  value = try(aws_dynamodb_table.this[0].arn, "")
}
