output "endpoints" {
  description = "Writer endpoint of each cluster and primary endpoint of each cache"
  value = {
    orders_db       = module.orders_db.cluster_endpoint
    inventory_db    = module.inventory_db.cluster_endpoint
    orders_cache    = module.orders_cache.primary_endpoint_address
    inventory_cache = module.inventory_cache.primary_endpoint_address
  }
}
