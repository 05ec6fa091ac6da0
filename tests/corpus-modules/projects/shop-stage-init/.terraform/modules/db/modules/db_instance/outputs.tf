output "db_instance_identifier" {
  value = try(aws_db_instance.this[0].identifier, null)
}

output "db_instance_arn" {
  value = try(aws_db_instance.this[0].arn, null)
}
