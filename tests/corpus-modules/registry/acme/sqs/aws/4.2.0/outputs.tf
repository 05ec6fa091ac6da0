output "queue_url" {
  value = try(aws_sqs_queue.this[0].url, null)
}

output "queue_arn" {
  value = try(aws_sqs_queue.this[0].arn, null)
}
