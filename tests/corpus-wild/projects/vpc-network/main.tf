terraform {
  required_version = ">= 1.5.0"

  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.0"
    }
  }
}

provider "aws" {
  region = "eu-west-1"
}

module "vpc_prod" {
  source = "./modules/vpc"

  name            = "prod"
  cidr            = "10.10.0.0/16"
  azs             = ["eu-west-1a", "eu-west-1b"]
  public_subnets  = ["10.10.101.0/24", "10.10.102.0/24"]
  private_subnets = ["10.10.1.0/24", "10.10.2.0/24"]

  enable_nat_gateway = true

  tags = var.tags
}

module "vpc_shared" {
  source = "./modules/vpc"

  name            = "shared"
  cidr            = "10.20.0.0/16"
  azs             = ["eu-west-1a"]
  public_subnets  = ["10.20.101.0/24"]
  private_subnets = ["10.20.1.0/24"]

  tags = var.tags
}
