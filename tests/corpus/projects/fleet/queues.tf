resource "aws_sqs_queue" "jobs" {
  for_each = var.queues

  name                       = "${local.name_prefix}-${each.key}"
  visibility_timeout_seconds = each.value.visibility_timeout
  message_retention_seconds  = each.value.retention_seconds
  delay_seconds              = each.value.delay_seconds
  sqs_managed_sse_enabled    = true

  tags = merge(local.common_tags, { Queue = each.key })
}
