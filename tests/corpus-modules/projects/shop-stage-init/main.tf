locals {
  name = "shop-stage"

  tags = {
    Environment = "stage"
    Team        = "shop"
  }
}

module "vpc" {
  source  = "registry.acme.test/acme/vpc/aws"
  version = "~> 5.0"

  name = local.name
  cidr = "10.30.0.0/16"

  azs             = ["eu-west-1a", "eu-west-1b"]
  private_subnets = ["10.30.1.0/24", "10.30.2.0/24"]

  tags     = local.tags
  vpc_tags = { Tier = "network" }
}

module "app_sg" {
  source  = "registry.acme.test/acme/security-group/aws"
  version = "~> 4.17"

  name        = "${local.name}-app"
  description = "The application tier"
  vpc_id      = module.vpc.vpc_id

  ingress_with_cidr_blocks = [
    {
      from_port   = 443
      to_port     = 443
      protocol    = "tcp"
      cidr_blocks = "10.30.0.0/16"
      description = "HTTPS inside the VPC"
    },
  ]

  tags = local.tags
}

module "db" {
  source  = "registry.acme.test/acme/rds/aws"
  version = "~> 6.0"

  identifier = "${local.name}-orders"

  engine            = "postgres"
  engine_version    = "16.3"
  family            = "postgres16"
  instance_class    = "db.t4g.medium"
  allocated_storage = 50

  db_name  = "orders"
  username = "orders_admin"
  port     = 5432

  vpc_security_group_ids = [module.app_sg.security_group_id]
  db_subnet_group_name   = "shop-stage-db"
  skip_final_snapshot    = true

  parameters = [
    {
      name  = "log_min_duration_statement"
      value = "500"
    },
  ]

  tags = local.tags
}

module "assets" {
  source  = "registry.acme.test/acme/s3-bucket/aws"
  version = ">= 4, < 5"

  bucket = "shop-stage-assets"

  versioning = {
    enabled = true
  }

  tags = local.tags
}
