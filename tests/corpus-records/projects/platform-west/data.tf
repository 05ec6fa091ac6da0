resource "aws_kms_key" "orders" {
  description         = "Orders data"
  enable_key_rotation = true
}

resource "aws_kms_key" "shared" {
  description         = "Shared with the deployment roles"
  enable_key_rotation = true

  policy = jsonencode({
    Version = "2008-10-17"
    Statement = [
      {
        Effect    = "Allow"
        Principal = { AWS = "arn:aws:iam::123456789012:root" }
        Action    = "kms:*"
        Resource  = "*"
      },
      {
        Effect = "Allow"
        Principal = {
          AWS = [
            "arn:aws:iam::123456789012:role/ExampleRoleAssumption1",
            "arn:aws:iam::123456789012:role/ExampleRoleAssumption2",
          ]
        }
        Action   = ["kms:Decrypt", "kms:DescribeKey"]
        Resource = "*"
      },
    ]
  })
}

resource "aws_secretsmanager_secret" "paloma" {
  name       = "paloma/example-secret"
  kms_key_id = aws_kms_key.orders.arn
}

resource "aws_secretsmanager_secret_policy" "paloma" {
  secret_arn          = aws_secretsmanager_secret.paloma.arn
  block_public_policy = true

  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Effect = "Allow"
      Principal = {
        AWS = [
          "arn:aws:iam::123456789012:role/ExampleRoleAssumption1",
          "arn:aws:iam::123456789012:role/ExampleRoleAssumption2",
        ]
      }
      Action   = ["secretsmanager:Get*", "secretsmanager:Describe*", "secretsmanager:List*"]
      Resource = aws_secretsmanager_secret.paloma.arn
    }]
  })
}

resource "aws_rds_cluster" "production" {
  cluster_identifier          = "aurora-production"
  engine                      = "aurora-postgresql"
  engine_version              = "16.4"
  master_username             = "app_admin"
  manage_master_user_password = true
  backup_retention_period     = 7
  deletion_protection         = true
  storage_encrypted           = true
  kms_key_id                  = aws_kms_key.orders.arn
}

resource "aws_rds_cluster" "prod" {
  cluster_identifier          = "aurora-cluster-prod"
  engine                      = "aurora-mysql"
  engine_version              = "8.0.mysql_aurora.3.05.2"
  master_username             = "admin"
  manage_master_user_password = true
  backup_retention_period     = 7
  deletion_protection         = true
  storage_encrypted           = true
}

resource "aws_elasticache_cluster" "sessions" {
  cluster_id           = "test-memcached"
  engine               = "memcached"
  engine_version       = "1.4.14"
  node_type            = "cache.m1.small"
  num_cache_nodes      = 2
  parameter_group_name = "default.memcached1.4"
  az_mode              = "cross-az"
}

resource "aws_sns_topic" "alerts" {
  name = "hello-topic"
}
