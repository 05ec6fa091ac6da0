# Network logging for the shared VPC: flow logs and DNS query logs, both to the
# central log bucket.
resource "aws_flow_log" "vpc" {
  vpc_id               = var.vpc_id
  traffic_type         = "ALL"
  log_destination_type = "s3"
  log_destination      = var.log_bucket_arn
}

resource "aws_route53_resolver_query_log_config" "vpc" {
  name            = "sample-config-name"
  destination_arn = var.log_bucket_arn
}
