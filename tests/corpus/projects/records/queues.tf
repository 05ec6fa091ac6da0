# Created before the regional sqs.<region> endpoints: the state records the queue by its
# <region>.queue.amazonaws.com URL.
resource "aws_sqs_queue" "jobs" {
  name                       = "MyQueue"
  visibility_timeout_seconds = 30
}
