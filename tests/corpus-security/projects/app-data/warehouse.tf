resource "aws_redshift_subnet_group" "warehouse" {
  name       = "${var.name_prefix}-warehouse"
  subnet_ids = var.data_subnet_ids

  tags = local.tags
}

resource "aws_redshift_parameter_group" "warehouse" {
  name   = "${var.name_prefix}-warehouse"
  family = "redshift-1.0"

  parameter {
    name  = "require_ssl"
    value = "true"
  }

  parameter {
    name  = "enable_user_activity_logging"
    value = "true"
  }

  tags = local.tags
}

resource "aws_redshift_cluster" "warehouse" {
  cluster_identifier           = "${var.name_prefix}-warehouse"
  database_name                = "analytics"
  master_username              = "warehouse_admin"
  manage_master_password       = true
  node_type                    = "ra3.xlplus"
  cluster_type                 = "multi-node"
  number_of_nodes              = var.warehouse_node_count
  cluster_subnet_group_name    = aws_redshift_subnet_group.warehouse.name
  cluster_parameter_group_name = aws_redshift_parameter_group.warehouse.name
  vpc_security_group_ids       = [var.security_group_ids["warehouse"]]

  publicly_accessible  = false
  enhanced_vpc_routing = true
  encrypted            = true
  kms_key_id           = aws_kms_key.data.arn

  automated_snapshot_retention_period = var.warehouse_snapshot_retention_days
  preferred_maintenance_window        = "sat:03:00-sat:03:30"
  allow_version_upgrade               = true
  skip_final_snapshot                 = false
  final_snapshot_identifier           = "${var.name_prefix}-warehouse-final"

  tags = local.tags
}

resource "aws_redshift_logging" "warehouse" {
  cluster_identifier   = aws_redshift_cluster.warehouse.id
  log_destination_type = "cloudwatch"
  log_exports          = ["connectionlog", "useractivitylog", "userlog"]
}
