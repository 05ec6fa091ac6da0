provider "aws" {
  region = "us-west-2"

  default_tags {
    tags = {
      Team      = "data"
      ManagedBy = "terraform"
    }
  }
}
