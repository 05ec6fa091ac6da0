provider "aws" {
  region = var.region

  # Every taggable resource gets these; resource-level `tags` add to them and
  # win on conflicts.
  default_tags {
    tags = {
      Environment = var.environment
      ManagedBy   = "terraform"
      Project     = "build-platform"
    }
  }
}
