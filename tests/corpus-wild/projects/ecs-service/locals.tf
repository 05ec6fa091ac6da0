locals {
  name = "${var.service_name}-${var.environment}"

  common_tags = {
    Team        = "commerce"
    Environment = var.environment
  }
}
