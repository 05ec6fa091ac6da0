provider "aws" {
  region = "us-east-1"

  default_tags {
    tags = {
      Team      = "storage"
      ManagedBy = "terraform"
    }
  }
}

provider "aws" {
  alias  = "replica"
  region = "us-west-2"
}
