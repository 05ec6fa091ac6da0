output "api_instance_id" {
  description = "Instance id of the API server."
  value       = aws_instance.api.id
}

output "orders_queue_url" {
  description = "URL of the orders queue."
  value       = aws_sqs_queue.orders.url
}

output "artifacts_bucket" {
  description = "Bucket holding build artifacts."
  value       = aws_s3_bucket.artifacts.bucket
}

output "db_endpoint" {
  description = "Connection endpoint of the orders database."
  value       = aws_db_instance.orders.endpoint
}

output "alerts_topic_arn" {
  description = "SNS topic the alarms notify."
  value       = aws_sns_topic.alerts.arn
}
