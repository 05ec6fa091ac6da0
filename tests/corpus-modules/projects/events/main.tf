locals {
  tags = {
    Environment = "prod"
    Team        = "events"
  }
}

module "queue" {
  source   = "registry.acme.test/acme/sqs/aws"
  version  = "~> 4.0"
  for_each = var.queues

  name                       = "events-${each.key}"
  visibility_timeout_seconds = each.value.visibility_timeout_seconds
  message_retention_seconds  = each.value.message_retention_seconds
  delay_seconds              = each.value.delay_seconds
  receive_wait_time_seconds  = 20

  tags = merge(local.tags, { Queue = each.key })
}

module "worker" {
  source  = "registry.acme.test/acme/lambda/aws"
  version = "7.2.0"

  function_name = "events-worker"
  description   = "Drains the event queues"
  handler       = "worker.handler"
  runtime       = "python3.12"
  memory_size   = 256
  timeout       = 30
  lambda_role   = "arn:aws:iam::210987654321:role/events-worker"

  s3_existing_package = {
    bucket = "acme-artifacts-eu-west-1"
    key    = "events-worker/1.4.2.zip"
  }

  environment_variables = {
    QUEUE_PREFIX = "events-"
    LOG_LEVEL    = "info"
  }

  tracing_mode                      = "Active"
  cloudwatch_logs_retention_in_days = 14

  tags = local.tags
}

module "sessions" {
  source  = "registry.acme.test/acme/dynamodb-table/aws"
  version = "~> 4.0"

  name     = "events-sessions"
  hash_key = "session_id"

  attributes = [
    {
      name = "session_id"
      type = "S"
    },
  ]

  point_in_time_recovery_enabled = true
  server_side_encryption_enabled = true
  deletion_protection_enabled    = true

  tags = local.tags
}
