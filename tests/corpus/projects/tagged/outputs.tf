output "artifact_bucket_arn" {
  description = "ARN of the build artifact bucket."
  value       = aws_s3_bucket.artifacts.arn
}

output "log_bucket_name" {
  description = "Bucket that receives S3 server access logs."
  value       = aws_s3_bucket.logs.bucket
}

output "builder_instance_id" {
  description = "Instance id of the build runner."
  value       = aws_instance.builder.id
}

output "bucket_events_queue_url" {
  description = "URL of the bucket event queue."
  value       = aws_sqs_queue.bucket_events.url
}
