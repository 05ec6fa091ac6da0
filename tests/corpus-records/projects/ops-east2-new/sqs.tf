resource "aws_sqs_queue" "this" {
  for_each = var.queues

  name                       = each.key
  visibility_timeout_seconds = each.value.visibility_timeout
  message_retention_seconds  = each.value.retention_seconds
  sqs_managed_sse_enabled    = true
}
