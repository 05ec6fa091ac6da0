locals {
  name = "pay-stack"

  bucket_names = { for key, bucket in var.buckets : key => "${local.name}-${key}-${var.account_id}" }

  # Every bucket refuses plain HTTP; receipts is also readable by the disputes role.
  tls_only_statement = {
    for key, name in local.bucket_names : key => {
      Sid       = "DenyInsecureTransport"
      Effect    = "Deny"
      Principal = "*"
      Action    = "s3:*"
      Resource  = ["arn:aws:s3:::${name}", "arn:aws:s3:::${name}/*"]
      Condition = { Bool = { "aws:SecureTransport" = "false" } }
    }
  }

  bucket_policies = {
    receipts = jsonencode({
      Version = "2012-10-17"
      Statement = [
        local.tls_only_statement["receipts"],
        {
          Sid       = "DisputesRead"
          Effect    = "Allow"
          Principal = { AWS = "arn:aws:iam::${var.account_id}:role/pay-stack-disputes" }
          Action    = ["s3:GetObject"]
          Resource  = "arn:aws:s3:::${local.bucket_names["receipts"]}/*"
        },
      ]
    })
    artifacts = jsonencode({
      Version   = "2012-10-17"
      Statement = [local.tls_only_statement["artifacts"]]
    })
  }

  key_policy = jsonencode({
    Version = "2012-10-17"
    Statement = [
      {
        Sid       = "AccountAdmin"
        Effect    = "Allow"
        Principal = { AWS = "arn:aws:iam::${var.account_id}:root" }
        Action    = "kms:*"
        Resource  = "*"
      },
      {
        Sid       = "PaymentsServices"
        Effect    = "Allow"
        Principal = { AWS = "arn:aws:iam::${var.account_id}:role/pay-stack-app" }
        Action    = ["kms:Decrypt", "kms:GenerateDataKey"]
        Resource  = "*"
      },
    ]
  })

  queue_policies = {
    settlements = jsonencode({
      Version = "2012-10-17"
      Statement = [{
        Sid       = "EventsTopic"
        Effect    = "Allow"
        Principal = { Service = "sns.amazonaws.com" }
        Action    = "sqs:SendMessage"
        Resource  = "arn:aws:sqs:${var.region}:${var.account_id}:${local.name}-settlements"
        Condition = { ArnEquals = { "aws:SourceArn" = "arn:aws:sns:${var.region}:${var.account_id}:${local.name}-events" } }
      }]
    })
    refunds = jsonencode({
      Version = "2012-10-17"
      Statement = [{
        Sid       = "RefundWorker"
        Effect    = "Allow"
        Principal = { AWS = "arn:aws:iam::${var.account_id}:role/pay-stack-refund-worker" }
        Action    = ["sqs:SendMessage", "sqs:ReceiveMessage", "sqs:DeleteMessage"]
        Resource  = "arn:aws:sqs:${var.region}:${var.account_id}:${local.name}-refunds"
      }]
    })
  }

  topic_policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Sid       = "AccountPublish"
      Effect    = "Allow"
      Principal = { AWS = "arn:aws:iam::${var.account_id}:root" }
      Action    = ["sns:Publish", "sns:Subscribe"]
      Resource  = "arn:aws:sns:${var.region}:${var.account_id}:${local.name}-events"
    }]
  })

  repository_policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Sid       = "DeployPull"
      Effect    = "Allow"
      Principal = { AWS = "arn:aws:iam::${var.account_id}:role/pay-stack-deploy" }
      Action    = ["ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"]
    }]
  })
}
