resource "aws_s3_bucket" "cross_account" {
  bucket = "my-test-bucket-cross-account"
}

resource "aws_s3_bucket_versioning" "cross_account" {
  bucket = aws_s3_bucket.cross_account.id

  versioning_configuration {
    status = "Enabled"
  }
}

resource "aws_s3_bucket" "keep" {
  bucket = "sandbox-keep-777788889999"
}
