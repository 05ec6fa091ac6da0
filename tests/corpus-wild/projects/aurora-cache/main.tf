locals {
  name_prefix = "shop-${var.environment}"

  tags = {
    Environment = var.environment
    Team        = "data-platform"
    ManagedBy   = "terraform"
  }

  # Cluster parameters every Aurora cluster starts from; a call merges its own on top.
  cluster_parameters = {
    "rds.force_ssl"                     = "1"
    log_min_duration_statement          = "1000"
    idle_in_transaction_session_timeout = "300000"
  }
}

module "orders_db" {
  source = "./modules/aurora"

  name            = "${local.name_prefix}-orders"
  engine_version  = var.aurora_engine_version
  database_name   = "orders"
  master_username = "orders_admin"

  instance_count           = 3
  instance_class           = "db.r6g.large"
  instance_class_overrides = { "0" = "db.r6g.xlarge" }

  vpc_id     = var.vpc_id
  subnet_ids = var.database_subnet_ids
  kms_key_id = aws_kms_key.data.arn

  allowed_security_groups = { app = var.app_security_group_id }
  allowed_cidr_blocks     = merge(var.trusted_cidrs, { reporting = "10.30.8.0/22" })

  cluster_parameters = merge(local.cluster_parameters, { log_min_duration_statement = "500" })
  db_parameters      = try(var.instance_parameters["orders"], {})

  backup_retention_period = 14
  deletion_protection     = true

  alarm_actions             = [aws_sns_topic.data_alerts.arn]
  cpu_alarm_threshold       = 75
  freeable_memory_threshold = 2147483648

  tags = merge(local.tags, { Service = "orders", CostCenter = "cc-1021" })
}

module "inventory_db" {
  source = "./modules/aurora"

  name            = "${local.name_prefix}-inventory"
  engine_version  = var.aurora_engine_version
  database_name   = "inventory"
  master_username = "inventory_admin"

  instance_count = 2
  instance_class = "db.r6g.large"

  vpc_id     = var.vpc_id
  subnet_ids = var.database_subnet_ids
  kms_key_id = aws_kms_key.data.arn

  allowed_security_groups = { app = var.app_security_group_id }
  allowed_cidr_blocks     = var.trusted_cidrs

  cluster_parameters = local.cluster_parameters
  db_parameters      = try(var.instance_parameters["inventory"], {})

  alarm_actions = [aws_sns_topic.data_alerts.arn]

  tags = merge(local.tags, { Service = "inventory", CostCenter = "cc-1034" })
}

module "orders_cache" {
  source = "./modules/redis"

  name               = "${local.name_prefix}-orders-cache"
  description        = "Carts and checkout sessions"
  engine_version     = "7.1"
  node_type          = "cache.r7g.large"
  num_cache_clusters = 3
  multi_az_enabled   = true

  vpc_id     = var.vpc_id
  subnet_ids = var.database_subnet_ids
  kms_key_id = aws_kms_key.data.arn

  allowed_security_groups = { app = var.app_security_group_id }

  parameters = {
    "maxmemory-policy" = "allkeys-lru"
    timeout            = "300"
  }

  snapshot_retention_limit = 7

  alarm_actions = [aws_sns_topic.data_alerts.arn]

  tags = merge(local.tags, { Service = "orders", CostCenter = "cc-1021" })
}

module "inventory_cache" {
  source = "./modules/redis"

  name               = "${local.name_prefix}-inventory-cache"
  engine_version     = "7.1"
  node_type          = "cache.m7g.large"
  num_cache_clusters = 2

  vpc_id     = var.vpc_id
  subnet_ids = var.database_subnet_ids
  kms_key_id = aws_kms_key.data.arn

  allowed_security_groups = {
    app        = var.app_security_group_id
    stock-sync = "sg-0f5b7d9e1a3c68025" # the warehouse team's stock sync workers
  }

  parameters = {
    "maxmemory-policy" = "volatile-lru"
  }

  alarm_actions             = [aws_sns_topic.data_alerts.arn]
  freeable_memory_threshold = 536870912

  tags = merge(local.tags, { Service = "inventory", CostCenter = "cc-1034" })
}
