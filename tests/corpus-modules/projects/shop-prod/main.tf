locals {
  name = "shop-prod"

  tags = {
    Environment = "prod"
    Team        = "shop"
  }
}

module "vpc" {
  source  = "registry.acme.test/acme/vpc/aws"
  version = "~> 5.0"

  name = local.name
  cidr = "10.10.0.0/16"

  azs             = ["eu-west-1a", "eu-west-1b"]
  private_subnets = ["10.10.1.0/24", "10.10.2.0/24"]

  tags     = local.tags
  vpc_tags = { Tier = "network" }
}

module "db_sg" {
  source  = "registry.acme.test/acme/security-group/aws"
  version = ">= 4, < 6"

  name        = "${local.name}-db"
  description = "PostgreSQL from the private subnets"
  vpc_id      = module.vpc.vpc_id

  ingress_with_cidr_blocks = [
    {
      from_port   = 5432
      to_port     = 5432
      protocol    = "tcp"
      cidr_blocks = "10.10.1.0/24,10.10.2.0/24"
      description = "PostgreSQL from the private subnets"
    },
  ]

  tags = local.tags
}

module "db" {
  source  = "registry.acme.test/acme/rds/aws"
  version = "~> 6.0"

  identifier = "${local.name}-orders"

  engine                = "postgres"
  engine_version        = "16.3"
  family                = "postgres16"
  instance_class        = var.db_instance_class
  allocated_storage     = 100
  max_allocated_storage = 500

  db_name  = "orders"
  username = "orders_admin"
  port     = 5432

  vpc_security_group_ids = [module.db_sg.security_group_id]
  db_subnet_group_name   = "shop-prod-db"
  multi_az               = true

  backup_retention_period = var.db_backup_retention_days
  backup_window           = "03:00-04:00"
  maintenance_window      = "sun:04:30-sun:05:30"
  deletion_protection     = true

  parameters = [
    {
      name  = "log_min_duration_statement"
      value = "1000"
    },
    {
      name         = "rds.force_ssl"
      value        = "1"
      apply_method = "pending-reboot"
    },
  ]

  tags = local.tags
}

module "reports_db" {
  source  = "registry.acme.test/acme/rds/aws"
  version = "~> 6.0"

  identifier = "${local.name}-reports"

  engine            = "postgres"
  engine_version    = "16.3"
  family            = "postgres16"
  instance_class    = "db.t4g.medium"
  allocated_storage = 50

  username = "reports_admin"
  port     = 5432

  vpc_security_group_ids = [module.db_sg.security_group_id]
  db_subnet_group_name   = "shop-prod-db"

  backup_retention_period = 3
  skip_final_snapshot     = true

  parameters = [
    {
      name  = "log_min_duration_statement"
      value = "5000"
    },
  ]

  tags = merge(local.tags, { Purpose = "reporting" })
}

module "assets" {
  source  = "registry.acme.test/acme/s3-bucket/aws"
  version = ">= 4, < 5"

  bucket = "shop-prod-assets"

  versioning = {
    enabled = false
  }

  server_side_encryption_configuration = {
    rule = {
      apply_server_side_encryption_by_default = {
        sse_algorithm = "AES256"
      }
    }
  }

  tags = local.tags
}
