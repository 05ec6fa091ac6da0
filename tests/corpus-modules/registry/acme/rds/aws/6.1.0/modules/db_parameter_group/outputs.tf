output "db_parameter_group_id" {
  value = try(aws_db_parameter_group.this[0].id, null)
}
