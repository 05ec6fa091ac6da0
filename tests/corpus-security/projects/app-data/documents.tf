resource "aws_docdb_subnet_group" "catalog" {
  name       = "${var.name_prefix}-catalog-docs"
  subnet_ids = var.data_subnet_ids

  tags = local.tags
}

resource "aws_docdb_cluster_parameter_group" "catalog" {
  name   = "${var.name_prefix}-catalog-docs"
  family = "docdb5.0"

  parameter {
    name  = "tls"
    value = "enabled"
  }

  parameter {
    name  = "audit_logs"
    value = "enabled"
  }

  tags = local.tags
}

resource "aws_docdb_cluster" "catalog" {
  cluster_identifier              = "${var.name_prefix}-catalog-docs"
  engine                          = "docdb"
  engine_version                  = "5.0.0"
  master_username                 = "catalog_admin"
  manage_master_user_password     = true
  db_subnet_group_name            = aws_docdb_subnet_group.catalog.name
  db_cluster_parameter_group_name = aws_docdb_cluster_parameter_group.catalog.name
  vpc_security_group_ids          = [var.security_group_ids["docdb"]]

  storage_encrypted   = true
  kms_key_id          = aws_kms_key.data.arn
  deletion_protection = true

  backup_retention_period         = var.docdb_backup_retention_days
  preferred_backup_window         = "01:00-02:00"
  preferred_maintenance_window    = "sun:02:30-sun:03:30"
  enabled_cloudwatch_logs_exports = ["audit", "profiler"]
  final_snapshot_identifier       = "${var.name_prefix}-catalog-docs-final"

  tags = local.tags
}

resource "aws_docdb_cluster_instance" "catalog" {
  count = 2

  identifier         = "${var.name_prefix}-catalog-docs-${count.index + 1}"
  cluster_identifier = aws_docdb_cluster.catalog.id
  instance_class     = "db.r6g.large"

  tags = local.tags
}
