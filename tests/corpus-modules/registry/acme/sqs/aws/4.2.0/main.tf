resource "aws_sqs_queue" "this" {
  count = var.create ? 1 : 0

  name = var.fifo_queue ? "${trimsuffix(var.name, ".fifo")}.fifo" : var.name

  fifo_queue                 = var.fifo_queue
  visibility_timeout_seconds = var.visibility_timeout_seconds
  message_retention_seconds  = var.message_retention_seconds
  max_message_size           = var.max_message_size
  delay_seconds              = var.delay_seconds
  receive_wait_time_seconds  = var.receive_wait_time_seconds

  kms_master_key_id       = var.kms_master_key_id
  sqs_managed_sse_enabled = var.kms_master_key_id != null ? null : var.sqs_managed_sse_enabled

  tags = var.tags
}
