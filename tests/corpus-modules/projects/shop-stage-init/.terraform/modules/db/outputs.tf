output "db_instance_identifier" {
  value = module.db_instance.db_instance_identifier
}

output "db_instance_arn" {
  value = module.db_instance.db_instance_arn
}

output "db_parameter_group_id" {
  value = module.db_parameter_group.db_parameter_group_id
}
