output "s3_bucket_id" {
  value = try(aws_s3_bucket.this[0].id, "")
}

output "s3_bucket_arn" {
  value = try(aws_s3_bucket.this[0].arn, "")
}
