resource "aws_ssm_document" "reindex_catalog" {
  name            = "${var.name_prefix}-reindex-catalog"
  document_type   = "Command"
  document_format = "YAML"
  target_type     = "/AWS::EC2::Instance"

  content = <<-EOT
    schemaVersion: "2.2"
    description: Rebuild the catalogue search index from the document store.
    parameters:
      batchSize:
        type: String
        default: "500"
    mainSteps:
      - action: aws:runShellScript
        name: reindex
        inputs:
          timeoutSeconds: "3600"
          runCommand:
            - /opt/catalog/bin/reindex --batch-size {{ batchSize }}
  EOT

  tags = local.tags
}

resource "aws_iam_role" "order_pipeline" {
  name = "${var.name_prefix}-order-pipeline"
  assume_role_policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Effect    = "Allow"
      Action    = "sts:AssumeRole"
      Principal = { Service = "states.amazonaws.com" }
    }]
  })

  tags = local.tags
}

resource "aws_cloudwatch_log_group" "order_pipeline" {
  name              = "/aws/vendedlogs/states/${var.name_prefix}-order-pipeline"
  retention_in_days = 90
  kms_key_id        = aws_kms_key.data.arn

  tags = local.tags
}

resource "aws_sfn_state_machine" "order_pipeline" {
  name     = "${var.name_prefix}-order-pipeline"
  role_arn = aws_iam_role.order_pipeline.arn
  type     = "STANDARD"

  definition = jsonencode({
    Comment = "Reserve stock, charge, then hand the order to shipping"
    StartAt = "Reserve"
    States = {
      Reserve = {
        Type     = "Task"
        Resource = "arn:aws:states:::sqs:sendMessage"
        Parameters = {
          QueueUrl        = aws_sqs_queue.work["orders"].id
          "MessageBody.$" = "$"
        }
        Next = "Ship"
      }
      Ship = {
        Type     = "Task"
        Resource = "arn:aws:states:::sns:publish"
        Parameters = {
          TopicArn    = aws_sns_topic.order_events.arn
          "Message.$" = "$"
        }
        End = true
      }
    }
  })

  logging_configuration {
    log_destination        = "${aws_cloudwatch_log_group.order_pipeline.arn}:*"
    include_execution_data = true
    level                  = "ALL"
  }

  tracing_configuration {
    enabled = true
  }

  tags = local.tags
}
