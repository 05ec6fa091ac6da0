output "web_instance_id" {
  description = "Instance id of the web server."
  value       = aws_instance.web.id
}

output "web_private_ip" {
  description = "Private address of the web server."
  value       = aws_instance.web.private_ip
}

output "assets_bucket" {
  description = "Bucket that holds uploaded images and thumbnails."
  value       = aws_s3_bucket.assets.bucket
}

output "jobs_queue_url" {
  description = "URL of the background jobs queue."
  value       = aws_sqs_queue.jobs.url
}

output "db_endpoint" {
  description = "Connection endpoint of the application database."
  value       = aws_db_instance.main.endpoint
}

output "alerts_topic_arn" {
  description = "SNS topic the alarms notify."
  value       = aws_sns_topic.alerts.arn
}
