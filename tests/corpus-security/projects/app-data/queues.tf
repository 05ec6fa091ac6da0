resource "aws_sqs_queue" "work" {
  for_each = var.queues

  name                       = "${var.name_prefix}-${each.key}"
  visibility_timeout_seconds = each.value.visibility_timeout_seconds
  message_retention_seconds  = each.value.message_retention_seconds
  receive_wait_time_seconds  = each.value.receive_wait_time_seconds
  sqs_managed_sse_enabled    = true

  tags = local.tags
}

# Fed by the order events topic only.
resource "aws_sqs_queue_policy" "shipment_updates" {
  queue_url = aws_sqs_queue.work["shipment-updates"].id
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Sid       = "OrderEventsTopic"
      Effect    = "Allow"
      Principal = { Service = "sns.amazonaws.com" }
      Action    = "sqs:SendMessage"
      Resource  = aws_sqs_queue.work["shipment-updates"].arn
      Condition = {
        ArnEquals = { "aws:SourceArn" = aws_sns_topic.order_events.arn }
      }
    }]
  })
}

# Carrier manifests dropped by the old SFTP importer; created before the
# encryption baseline and not yet migrated.
resource "aws_sqs_queue" "carrier_import" {
  name                       = "${var.name_prefix}-carrier-import"
  visibility_timeout_seconds = 300
  message_retention_seconds  = 345600

  tags = local.tags
}
