provider "aws" {
  region = "us-east-1"

  default_tags {
    tags = {
      Team      = "webapp"
      ManagedBy = "terraform"
    }
  }
}
