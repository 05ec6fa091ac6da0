module "sessions_cache" {
  source = "./modules/redis"

  name               = "${var.name_prefix}-sessions"
  description        = "Checkout and session state"
  node_type          = var.cache_node_type
  num_cache_clusters = 2
  subnet_ids         = var.data_subnet_ids
  security_group_ids = [var.security_group_ids["cache"]]
  kms_key_arn        = aws_kms_key.data.arn

  snapshot_retention_limit = var.cache_snapshot_retention_days
  snapshot_window          = "02:00-03:00"
  maintenance_window       = "sun:04:00-sun:05:00"

  parameters = {
    "maxmemory-policy" = "volatile-lru"
    "timeout"          = "300"
  }

  tags = local.tags
}
