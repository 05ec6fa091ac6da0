resource "aws_db_instance" "this" {
  for_each = var.databases

  identifier                  = each.key
  engine                      = each.value.engine
  engine_version              = each.value.engine_version
  instance_class              = each.value.instance_class
  allocated_storage           = each.value.allocated_storage
  max_allocated_storage       = each.value.max_allocated_storage
  deletion_protection         = each.value.deletion_protection
  publicly_accessible         = each.value.publicly_accessible
  username                    = "app_admin"
  manage_master_user_password = true
  storage_encrypted           = true
  backup_retention_period     = 7
  skip_final_snapshot         = false
  final_snapshot_identifier   = "${each.key}-final"
}

resource "aws_rds_cluster" "prod" {
  cluster_identifier          = "aurora-cluster-prod"
  engine                      = "aurora-mysql"
  engine_version              = "8.0.mysql_aurora.3.05.2"
  master_username             = "admin"
  manage_master_user_password = true
  storage_encrypted           = true
  backup_retention_period     = 7
  deletion_protection         = true
}

resource "aws_rds_cluster_instance" "prod" {
  count = 2

  identifier         = "aurora-instance-${count.index + 1}"
  cluster_identifier = aws_rds_cluster.prod.id
  engine             = aws_rds_cluster.prod.engine
  instance_class     = "db.r6g.large"
}
