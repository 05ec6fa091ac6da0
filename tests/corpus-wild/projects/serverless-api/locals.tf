locals {
  name_prefix = "${var.project}-${var.environment}"

  tags = {
    Project     = var.project
    Environment = var.environment
    Service     = "parcel-tracking"
    ManagedBy   = "terraform"
  }

  # Every function gets these; an entry's own `environment` map wins on a clash.
  lambda_environment = {
    LOG_LEVEL                    = "INFO"
    PARCELS_TABLE                = aws_dynamodb_table.this["parcels"].name
    IDEMPOTENCY_TABLE            = aws_dynamodb_table.this["idempotency"].name
    POWERTOOLS_METRICS_NAMESPACE = "Parcels"
  }

  # Functions behind at least one HTTP route: one integration and one permission each.
  api_functions = toset([for route in values(var.routes) : route.function])

  # Queues drained by one of our functions (the others are read from outside this stack).
  queue_consumers = { for name, queue in var.queues : name => queue if queue.consumer != null }
}
