resource "aws_sqs_queue" "bucket_events" {
  name                       = "build-bucket-events"
  visibility_timeout_seconds = 30
  message_retention_seconds  = 345600
  sqs_managed_sse_enabled    = true

  tags = {
    Name = "build-bucket-events"
    Team = "platform"
  }
}
