resource "aws_ebs_encryption_by_default" "this" {
  enabled = true
}

resource "aws_iam_user" "test" {
  name = "test-user"
}

resource "aws_synthetics_canary" "sample" {
  name                 = "sample_canary_name"
  artifact_s3_location = "s3://data-canary-artifacts-123456789012/"
  execution_role_arn   = "arn:aws:iam::123456789012:role/canary-exec"
  handler              = "pageLoadBlueprint.handler"
  zip_file             = "${path.module}/canary/canary.zip"
  runtime_version      = "syn-nodejs-puppeteer-9.1"

  schedule {
    expression = "rate(5 minutes)"
  }
}
