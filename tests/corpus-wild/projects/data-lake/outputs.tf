output "bucket_names" {
  description = "Bucket name per data lake zone"
  value       = { for k, b in aws_s3_bucket.this : k => b.bucket }
}

output "bucket_arns" {
  description = "Bucket ARN per data lake zone"
  value       = { for k, b in aws_s3_bucket.this : k => b.arn }
}
