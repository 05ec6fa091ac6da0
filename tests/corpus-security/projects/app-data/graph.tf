resource "aws_neptune_subnet_group" "graph" {
  name       = "${var.name_prefix}-graph"
  subnet_ids = var.data_subnet_ids

  tags = local.tags
}

resource "aws_neptune_cluster" "graph" {
  cluster_identifier        = "${var.name_prefix}-graph"
  engine                    = "neptune"
  engine_version            = "1.3.2.1"
  neptune_subnet_group_name = aws_neptune_subnet_group.graph.name
  vpc_security_group_ids    = [var.security_group_ids["neptune"]]

  storage_encrypted                   = true
  kms_key_arn                         = aws_kms_key.data.arn
  iam_database_authentication_enabled = true
  deletion_protection                 = true
  copy_tags_to_snapshot               = true

  backup_retention_period        = 7
  preferred_backup_window        = "00:30-01:30"
  preferred_maintenance_window   = "sat:23:00-sun:00:00"
  enable_cloudwatch_logs_exports = ["audit"]

  skip_final_snapshot       = false
  final_snapshot_identifier = "${var.name_prefix}-graph-final"

  tags = local.tags
}

resource "aws_neptune_cluster_instance" "graph" {
  identifier         = "${var.name_prefix}-graph-1"
  cluster_identifier = aws_neptune_cluster.graph.id
  instance_class     = "db.r6g.large"
  engine             = "neptune"

  tags = local.tags
}
