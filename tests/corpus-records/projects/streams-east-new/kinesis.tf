resource "aws_kinesis_stream" "this" {
  for_each = var.streams

  name             = each.key
  shard_count      = each.value.shards
  retention_period = each.value.retention_hours
  encryption_type  = "KMS"
  kms_key_id       = "alias/aws/kinesis"

  tags = {
    Stream = each.key
  }
}
