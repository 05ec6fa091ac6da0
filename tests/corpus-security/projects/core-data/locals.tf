locals {
  name = "acme-${var.app}-${var.environment}"

  default_tags = {
    Environment = var.environment
    Application = var.app
    ManagedBy   = "terraform"
    Repository  = "acme/ledger-infra"
  }
}
