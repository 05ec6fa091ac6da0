locals {
  search_domain_name = "${var.name_prefix}-catalog"
  search_log_types   = ["AUDIT_LOGS", "ES_APPLICATION_LOGS", "INDEX_SLOW_LOGS"]
}

resource "aws_cloudwatch_log_group" "search" {
  for_each = toset(local.search_log_types)

  name              = "/aws/opensearch/${local.search_domain_name}/${lower(each.key)}"
  retention_in_days = 90
  kms_key_id        = aws_kms_key.data.arn

  tags = local.tags
}

resource "aws_cloudwatch_log_resource_policy" "search" {
  policy_name = "${local.search_domain_name}-logs"
  policy_document = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Effect    = "Allow"
      Principal = { Service = "es.amazonaws.com" }
      Action    = ["logs:PutLogEvents", "logs:CreateLogStream"]
      Resource  = [for g in aws_cloudwatch_log_group.search : "${g.arn}:*"]
      Condition = {
        StringEquals = { "aws:SourceAccount" = local.account_id }
      }
    }]
  })
}

resource "aws_opensearch_domain" "catalog" {
  domain_name    = local.search_domain_name
  engine_version = "OpenSearch_2.13"

  cluster_config {
    instance_type            = "r6g.large.search"
    instance_count           = 3
    dedicated_master_enabled = true
    dedicated_master_type    = "m6g.large.search"
    dedicated_master_count   = 3
    zone_awareness_enabled   = true

    zone_awareness_config {
      availability_zone_count = 3
    }
  }

  ebs_options {
    ebs_enabled = true
    volume_type = "gp3"
    volume_size = 200
  }

  vpc_options {
    subnet_ids         = var.data_subnet_ids
    security_group_ids = [var.security_group_ids["search"]]
  }

  encrypt_at_rest {
    enabled    = true
    kms_key_id = aws_kms_key.data.arn
  }

  node_to_node_encryption {
    enabled = true
  }

  domain_endpoint_options {
    enforce_https       = true
    tls_security_policy = "Policy-Min-TLS-1-2-PFS-2023-10"
  }

  advanced_security_options {
    enabled                        = true
    anonymous_auth_enabled         = false
    internal_user_database_enabled = false

    master_user_options {
      master_user_arn = var.search_master_role_arn
    }
  }

  advanced_options = {
    "rest.action.multi.allow_explicit_index" = "true"
  }

  dynamic "log_publishing_options" {
    for_each = aws_cloudwatch_log_group.search

    content {
      log_type                 = log_publishing_options.key
      cloudwatch_log_group_arn = log_publishing_options.value.arn
    }
  }

  access_policies = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Effect    = "Allow"
      Principal = { AWS = [var.search_master_role_arn, var.search_reader_role_arn] }
      Action    = "es:ESHttp*"
      Resource  = "arn:aws:es:${var.region}:${local.account_id}:domain/${local.search_domain_name}/*"
    }]
  })

  tags = local.tags

  depends_on = [aws_cloudwatch_log_resource_policy.search]
}
