resource "aws_kinesis_stream" "clickstream" {
  name             = "${var.name_prefix}-clickstream"
  retention_period = 48
  encryption_type  = "KMS"
  kms_key_id       = "alias/aws/kinesis"

  stream_mode_details {
    stream_mode = "ON_DEMAND"
  }

  tags = local.tags
}

resource "aws_cloudwatch_log_group" "kafka" {
  name              = "/aws/msk/${var.name_prefix}-events"
  retention_in_days = 30
  kms_key_id        = aws_kms_key.data.arn

  tags = local.tags
}

resource "aws_msk_cluster" "events" {
  cluster_name           = "${var.name_prefix}-events"
  kafka_version          = "3.6.0"
  number_of_broker_nodes = 3

  broker_node_group_info {
    instance_type   = "kafka.m7g.large"
    client_subnets  = var.data_subnet_ids
    security_groups = [var.security_group_ids["kafka"]]

    storage_info {
      ebs_storage_info {
        volume_size = 500
      }
    }

    connectivity_info {
      public_access {
        type = "DISABLED"
      }
    }
  }

  client_authentication {
    unauthenticated = false

    sasl {
      iam = true
    }
  }

  encryption_info {
    encryption_at_rest_kms_key_arn = aws_kms_key.data.arn

    encryption_in_transit {
      client_broker = "TLS"
      in_cluster    = true
    }
  }

  logging_info {
    broker_logs {
      cloudwatch_logs {
        enabled   = true
        log_group = aws_cloudwatch_log_group.kafka.name
      }
    }
  }

  tags = local.tags
}
