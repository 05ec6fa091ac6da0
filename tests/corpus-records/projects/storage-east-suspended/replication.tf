resource "aws_s3_bucket_replication_configuration" "backup" {
  bucket = aws_s3_bucket.this["production-backup-bucket"].id
  role   = "arn:aws:iam::111111111111:role/s3-replication"

  rule {
    id     = "to-us-west-2"
    status = "Enabled"

    destination {
      bucket        = "arn:aws:s3:::production-backup-bucket-replica"
      storage_class = "STANDARD_IA"
    }
  }
}
