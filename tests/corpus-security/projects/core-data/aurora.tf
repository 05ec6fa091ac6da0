resource "aws_rds_cluster" "payments" {
  cluster_identifier = "${local.name}-payments"
  engine             = "aurora-postgresql"
  engine_version     = "16.4"

  database_name               = "payments"
  master_username             = "payments_admin"
  manage_master_user_password = true

  db_subnet_group_name   = aws_db_subnet_group.this.name
  vpc_security_group_ids = var.db_security_group_ids

  storage_encrypted = true
  kms_key_id        = var.data_kms_key_arn

  iam_database_authentication_enabled = true

  backup_retention_period      = var.aurora_backup_retention_days
  preferred_backup_window      = "03:00-04:00"
  preferred_maintenance_window = "sun:04:30-sun:05:30"
  copy_tags_to_snapshot        = true
  deletion_protection          = true

  enabled_cloudwatch_logs_exports = ["postgresql"]

  skip_final_snapshot       = false
  final_snapshot_identifier = "${local.name}-payments-final"
}

resource "aws_rds_cluster_instance" "payments" {
  count = var.aurora_instance_count

  identifier         = "${local.name}-payments-${count.index + 1}"
  cluster_identifier = aws_rds_cluster.payments.id
  instance_class     = var.aurora_instance_class
  engine             = aws_rds_cluster.payments.engine
  engine_version     = aws_rds_cluster.payments.engine_version

  db_subnet_group_name = aws_db_subnet_group.this.name
  publicly_accessible  = false

  performance_insights_enabled    = true
  performance_insights_kms_key_id = var.data_kms_key_arn
  monitoring_interval             = 60
  monitoring_role_arn             = var.rds_monitoring_role_arn
  auto_minor_version_upgrade      = true
}
