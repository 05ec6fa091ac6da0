locals {
  port   = coalesce(var.port, var.engine == "aurora-postgresql" ? 5432 : 3306)
  family = "${var.engine}${split(".", var.engine_version)[0]}"

  alarms = {
    cpu             = { metric = "CPUUtilization", statistic = "Average", comparison = "GreaterThanThreshold", threshold = coalesce(var.cpu_alarm_threshold, 80) }
    freeable-memory = { metric = "FreeableMemory", statistic = "Minimum", comparison = "LessThanThreshold", threshold = var.freeable_memory_threshold }
  }
}

resource "aws_db_subnet_group" "this" {
  name        = var.name
  description = "Subnets of the ${var.name} Aurora cluster"
  subnet_ids  = var.subnet_ids
  tags        = var.tags
}

resource "aws_rds_cluster_parameter_group" "this" {
  name        = "${var.name}-cluster"
  family      = local.family
  description = "Cluster parameters of ${var.name}"

  dynamic "parameter" {
    for_each = var.cluster_parameters
    content {
      name  = parameter.key
      value = parameter.value
    }
  }

  tags = var.tags
}

resource "aws_db_parameter_group" "this" {
  name        = "${var.name}-instance"
  family      = local.family
  description = "Instance parameters of ${var.name}"

  dynamic "parameter" {
    for_each = var.db_parameters
    content {
      name  = parameter.key
      value = parameter.value
    }
  }

  tags = var.tags
}

resource "aws_rds_cluster" "this" {
  cluster_identifier = var.name
  engine             = var.engine
  engine_version     = var.engine_version
  database_name      = var.database_name
  port               = local.port

  master_username               = var.master_username
  manage_master_user_password   = true
  master_user_secret_kms_key_id = var.kms_key_id

  db_subnet_group_name            = aws_db_subnet_group.this.name
  db_cluster_parameter_group_name = aws_rds_cluster_parameter_group.this.name
  vpc_security_group_ids          = [aws_security_group.this.id]

  storage_encrypted                   = true
  kms_key_id                          = var.kms_key_id
  iam_database_authentication_enabled = var.iam_database_authentication_enabled
  enabled_cloudwatch_logs_exports     = ["postgresql"]

  backup_retention_period      = var.backup_retention_period
  preferred_backup_window      = var.preferred_backup_window
  preferred_maintenance_window = var.preferred_maintenance_window
  copy_tags_to_snapshot        = true
  deletion_protection          = var.deletion_protection
  final_snapshot_identifier    = "${var.name}-final"

  tags = merge(var.tags, var.cluster_tags)
}

resource "aws_rds_cluster_instance" "this" {
  count = var.instance_count

  identifier         = format("%s-%02d", var.name, count.index + 1)
  cluster_identifier = aws_rds_cluster.this.id
  engine             = aws_rds_cluster.this.engine
  engine_version     = aws_rds_cluster.this.engine_version
  instance_class     = try(var.instance_class_overrides[tostring(count.index)], var.instance_class)

  db_subnet_group_name         = aws_db_subnet_group.this.name
  db_parameter_group_name      = aws_db_parameter_group.this.name
  publicly_accessible          = false
  performance_insights_enabled = var.performance_insights_enabled

  tags = var.tags
}

resource "aws_security_group" "this" {
  name        = var.name
  description = "Access to the ${var.name} Aurora cluster"
  vpc_id      = var.vpc_id
  tags        = merge(var.tags, { Name = var.name })

  lifecycle {
    create_before_destroy = true
  }
}

resource "aws_vpc_security_group_ingress_rule" "cidr" {
  for_each = var.allowed_cidr_blocks

  security_group_id = aws_security_group.this.id
  description       = "PostgreSQL from ${each.key}"
  ip_protocol       = "tcp"
  from_port         = local.port
  to_port           = local.port
  cidr_ipv4         = each.value
  tags              = merge(var.tags, { Name = "${var.name}-${each.key}" })
}

resource "aws_vpc_security_group_ingress_rule" "security_group" {
  for_each = var.allowed_security_groups

  security_group_id            = aws_security_group.this.id
  description                  = "PostgreSQL from ${each.key}"
  ip_protocol                  = "tcp"
  from_port                    = local.port
  to_port                      = local.port
  referenced_security_group_id = each.value
  tags                         = merge(var.tags, { Name = "${var.name}-${each.key}" })
}

resource "aws_cloudwatch_metric_alarm" "this" {
  for_each = var.create_alarms ? local.alarms : {}

  alarm_name          = "${var.name}-${each.key}"
  alarm_description   = "${each.value.metric} of the ${var.name} cluster"
  namespace           = "AWS/RDS"
  metric_name         = each.value.metric
  statistic           = each.value.statistic
  comparison_operator = each.value.comparison
  threshold           = each.value.threshold
  period              = 300
  evaluation_periods  = 3
  alarm_actions       = var.alarm_actions
  ok_actions          = var.alarm_actions
  dimensions          = { DBClusterIdentifier = aws_rds_cluster.this.cluster_identifier }
  tags                = var.tags
}
