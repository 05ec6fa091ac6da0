provider "aws" {
  region = "us-west-2"

  default_tags {
    tags = {
      Team      = "storage"
      ManagedBy = "terraform"
    }
  }
}
