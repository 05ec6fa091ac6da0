locals {
  create_db_parameter_group = var.create_db_parameter_group
  parameter_group_name      = coalesce(var.parameter_group_name, var.identifier)
  parameter_group_name_id   = local.create_db_parameter_group ? module.db_parameter_group.db_parameter_group_id : var.parameter_group_name
}

module "db_parameter_group" {
  source = "./modules/db_parameter_group"

  create = local.create_db_parameter_group

  name        = local.parameter_group_name
  description = var.parameter_group_description
  family      = var.family
  parameters  = var.parameters

  tags = merge(var.tags, var.db_parameter_group_tags)
}

module "db_instance" {
  source = "./modules/db_instance"

  create     = var.create_db_instance
  identifier = var.identifier

  engine                = var.engine
  engine_version        = var.engine_version
  instance_class        = var.instance_class
  allocated_storage     = var.allocated_storage
  max_allocated_storage = var.max_allocated_storage
  storage_type          = var.storage_type
  storage_encrypted     = var.storage_encrypted
  kms_key_id            = var.kms_key_id

  db_name                     = var.db_name
  username                    = var.username
  manage_master_user_password = var.manage_master_user_password
  port                        = var.port

  vpc_security_group_ids = var.vpc_security_group_ids
  db_subnet_group_name   = var.db_subnet_group_name
  parameter_group_name   = local.parameter_group_name_id
  multi_az               = var.multi_az
  publicly_accessible    = var.publicly_accessible

  backup_window           = var.backup_window
  maintenance_window      = var.maintenance_window
  deletion_protection     = var.deletion_protection
  skip_final_snapshot     = var.skip_final_snapshot

  performance_insights_enabled = var.performance_insights_enabled
  auto_minor_version_upgrade   = var.auto_minor_version_upgrade

  tags = merge(var.tags, var.db_instance_tags)
}
