resource "aws_db_subnet_group" "this" {
  name        = local.name
  description = "Ledger databases"
  subnet_ids  = var.db_subnet_ids
}

# The system of record.
resource "aws_db_instance" "ledger" {
  identifier     = "${local.name}-ledger"
  engine         = "postgres"
  engine_version = "16.4"
  instance_class = var.db_instance_class

  allocated_storage     = 200
  max_allocated_storage = 1000
  storage_type          = "gp3"
  storage_encrypted     = true
  kms_key_id            = var.data_kms_key_arn

  db_name                     = "ledger"
  username                    = "ledger_admin"
  manage_master_user_password = true

  db_subnet_group_name   = aws_db_subnet_group.this.name
  vpc_security_group_ids = var.db_security_group_ids
  multi_az               = true
  publicly_accessible    = false

  iam_database_authentication_enabled = true

  backup_retention_period = var.ledger_backup_retention_days
  backup_window           = "04:00-05:00"
  maintenance_window      = "sun:05:30-sun:06:30"
  copy_tags_to_snapshot   = true
  deletion_protection     = true

  auto_minor_version_upgrade      = true
  performance_insights_enabled    = true
  performance_insights_kms_key_id = var.data_kms_key_arn
  monitoring_interval             = 60
  monitoring_role_arn             = var.rds_monitoring_role_arn
  enabled_cloudwatch_logs_exports = ["postgresql", "upgrade"]

  skip_final_snapshot       = false
  final_snapshot_identifier = "${local.name}-ledger-final"
}

# Copy for the finance team's reports, restored from the ledger's snapshots when needed.
resource "aws_db_instance" "reporting" {
  identifier     = "${local.name}-reporting"
  engine         = "postgres"
  engine_version = "16.4"
  instance_class = "db.t4g.large"

  allocated_storage = 100
  storage_type      = "gp3"
  storage_encrypted = true
  kms_key_id        = var.data_kms_key_arn

  db_name                     = "reporting"
  username                    = "reporting_admin"
  manage_master_user_password = true

  db_subnet_group_name   = aws_db_subnet_group.this.name
  vpc_security_group_ids = var.db_security_group_ids
  multi_az               = false
  publicly_accessible    = false

  iam_database_authentication_enabled = true

  backup_retention_period = var.reporting_backup_retention_days
  backup_window           = "04:00-05:00"
  maintenance_window      = "sun:06:30-sun:07:30"
  copy_tags_to_snapshot   = true
  deletion_protection     = var.reporting_deletion_protection

  auto_minor_version_upgrade = true
  monitoring_interval        = 60
  monitoring_role_arn        = var.rds_monitoring_role_arn

  skip_final_snapshot = true
}
