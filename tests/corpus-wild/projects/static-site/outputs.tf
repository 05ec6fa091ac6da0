output "distribution_id" {
  description = "CloudFront distribution id (for cache invalidations)"
  value       = aws_cloudfront_distribution.site.id
}

output "site_bucket" {
  description = "Bucket the deploy pipeline syncs the site into"
  value       = aws_s3_bucket.this["site"].bucket
}
