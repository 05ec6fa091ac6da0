terraform {
  required_version = ">= 1.6"

  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = "~> 5.70"
    }
  }
}

provider "aws" {
  region = var.region

  default_tags {
    tags = {
      Team      = "payments"
      Stack     = "pay-stack"
      ManagedBy = "terraform"
    }
  }
}
