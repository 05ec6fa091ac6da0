provider "aws" {
  region = "us-east-1"

  default_tags {
    tags = {
      Team      = "web"
      ManagedBy = "terraform"
    }
  }
}
