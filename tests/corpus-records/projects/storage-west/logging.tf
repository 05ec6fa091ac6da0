resource "aws_s3_bucket_logging" "critical" {
  bucket        = aws_s3_bucket.critical.id
  target_bucket = aws_s3_bucket.logs.id
  target_prefix = "logs/"
}
