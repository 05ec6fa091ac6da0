provider "aws" {
  region = "us-west-2"

  default_tags {
    tags = {
      Team      = "web"
      ManagedBy = "terraform"
    }
  }
}
