resource "aws_db_subnet_group" "orders" {
  name       = "${local.name_prefix}-db"
  subnet_ids = var.private_subnet_ids
  tags       = local.tags
}

resource "aws_db_instance" "orders" {
  identifier                  = "${local.name_prefix}-db"
  engine                      = "postgres"
  engine_version              = "16.2"
  instance_class              = var.db_instance_class
  allocated_storage           = var.db_allocated_storage
  storage_type                = "gp3"
  storage_encrypted           = true
  db_name                     = "orders"
  username                    = "orders_admin"
  manage_master_user_password = true
  db_subnet_group_name        = aws_db_subnet_group.orders.name
  backup_retention_period     = var.db_backup_retention_days
  multi_az                    = var.environment == "prod"
  deletion_protection         = true
  skip_final_snapshot         = false
  final_snapshot_identifier   = "${local.name_prefix}-db-final"
  tags                        = local.tags
}
