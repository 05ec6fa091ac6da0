provider "aws" {
  region = "us-east-2"

  default_tags {
    tags = {
      Team      = "ops"
      ManagedBy = "terraform"
    }
  }
}
