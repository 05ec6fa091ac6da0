locals {
  nodes = [for i in range(1, var.num_cache_clusters + 1) : format("%s-%03d", var.name, i)]

  # ElastiCache publishes host metrics per node (cache cluster): one alarm of each kind per node.
  alarm_kinds = {
    engine-cpu      = { metric = "EngineCPUUtilization", statistic = "Average", comparison = "GreaterThanThreshold", threshold = coalesce(var.cpu_alarm_threshold, 75) }
    freeable-memory = { metric = "FreeableMemory", statistic = "Minimum", comparison = "LessThanThreshold", threshold = coalesce(var.freeable_memory_threshold, 268435456) }
  }
  alarms = { for pair in setproduct(local.nodes, keys(local.alarm_kinds)) : "${pair[0]}-${pair[1]}" => merge(local.alarm_kinds[pair[1]], { node = pair[0] }) }
}

resource "aws_elasticache_subnet_group" "this" {
  name        = var.name
  description = "Subnets of ${var.name}"
  subnet_ids  = var.subnet_ids
  tags        = var.tags
}

resource "aws_elasticache_parameter_group" "this" {
  name        = var.name
  family      = var.family
  description = "Parameters of ${var.name}"

  dynamic "parameter" {
    for_each = var.parameters
    content {
      name  = parameter.key
      value = parameter.value
    }
  }

  tags = var.tags
}

resource "aws_elasticache_replication_group" "this" {
  replication_group_id = var.name
  description          = coalesce(var.description, "Redis for ${var.name}")

  engine               = "redis"
  engine_version       = var.engine_version
  node_type            = var.node_type
  num_cache_clusters   = var.num_cache_clusters
  port                 = var.port
  parameter_group_name = aws_elasticache_parameter_group.this.name
  subnet_group_name    = aws_elasticache_subnet_group.this.name
  security_group_ids   = [aws_security_group.this.id]

  automatic_failover_enabled = var.num_cache_clusters > 1
  multi_az_enabled           = var.multi_az_enabled
  at_rest_encryption_enabled = true
  kms_key_id                 = var.kms_key_id
  transit_encryption_enabled = true

  snapshot_retention_limit = var.snapshot_retention_limit
  snapshot_window          = var.snapshot_window
  maintenance_window       = var.maintenance_window

  tags = var.tags
}

resource "aws_security_group" "this" {
  name        = var.name
  description = "Access to the ${var.name} Redis replication group"
  vpc_id      = var.vpc_id
  tags        = merge(var.tags, { Name = var.name })

  lifecycle {
    create_before_destroy = true
  }
}

resource "aws_vpc_security_group_ingress_rule" "this" {
  for_each = var.allowed_security_groups

  security_group_id            = aws_security_group.this.id
  description                  = "Redis from ${each.key}"
  ip_protocol                  = "tcp"
  from_port                    = var.port
  to_port                      = var.port
  referenced_security_group_id = each.value
  tags                         = var.tags
}

resource "aws_cloudwatch_metric_alarm" "this" {
  for_each = var.create_alarms ? local.alarms : {}

  alarm_name          = each.key
  alarm_description   = "${each.value.metric} of ${each.value.node}"
  namespace           = "AWS/ElastiCache"
  metric_name         = each.value.metric
  statistic           = each.value.statistic
  comparison_operator = each.value.comparison
  threshold           = each.value.threshold
  period              = 300
  evaluation_periods  = 2
  alarm_actions       = var.alarm_actions
  dimensions          = { CacheClusterId = each.value.node }
  tags                = var.tags
}
