resource "aws_sqs_queue" "dlq" {
  for_each = var.queues

  name                      = "${local.name_prefix}-${each.key}-dlq"
  message_retention_seconds = each.value.dlq_retention_seconds
  sqs_managed_sse_enabled   = true

  tags = merge(local.tags, each.value.tags)
}

resource "aws_sqs_queue" "this" {
  for_each = var.queues

  name                       = "${local.name_prefix}-${each.key}"
  visibility_timeout_seconds = each.value.visibility_timeout
  message_retention_seconds  = each.value.retention_seconds
  receive_wait_time_seconds  = 20
  sqs_managed_sse_enabled    = true

  redrive_policy = jsonencode({
    deadLetterTargetArn = aws_sqs_queue.dlq[each.key].arn
    maxReceiveCount     = each.value.max_receive_count
  })

  tags = merge(local.tags, each.value.tags)
}
