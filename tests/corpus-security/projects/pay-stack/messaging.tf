resource "aws_sqs_queue" "this" {
  for_each = var.queues

  name                       = "${local.name}-${each.key}"
  visibility_timeout_seconds = each.value.visibility_timeout
  message_retention_seconds  = each.value.retention_seconds
  max_message_size           = each.value.max_message_size
  sqs_managed_sse_enabled    = true
}

resource "aws_sqs_queue_policy" "this" {
  for_each = var.queues

  queue_url = aws_sqs_queue.this[each.key].id
  policy    = local.queue_policies[each.key]
}

resource "aws_sns_topic" "events" {
  name              = "${local.name}-events"
  display_name      = "Payments events"
  kms_master_key_id = aws_kms_alias.data.name
  policy            = local.topic_policy
}
