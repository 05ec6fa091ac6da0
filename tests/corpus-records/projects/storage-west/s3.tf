resource "aws_s3_bucket" "critical" {
  bucket = "critical-data-bucket"
}

resource "aws_s3_bucket" "logs" {
  bucket = "logging-bucket"
}

resource "aws_s3_bucket" "production" {
  bucket = "production-data"
}
