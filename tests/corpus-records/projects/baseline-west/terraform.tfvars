vpc_id         = "vpc-0a1b2c3d4e5f60718"
log_bucket_arn = "arn:aws:s3:::sample-bucket-name"
