resource "aws_cloudtrail" "secondary" {
  name                          = "myTrail2"
  s3_bucket_name                = "ops-trail-logs-123456789012"
  include_global_service_events = false
  enable_log_file_validation    = true
}
