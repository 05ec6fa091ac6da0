resource "aws_wafv2_web_acl" "foo" {
  name        = "foo"
  description = "foo"
  scope       = "CLOUDFRONT"

  default_action {
    block {}
  }

  rule {
    name     = "foo"
    priority = 1

    action {
      block {}
    }

    statement {
      geo_match_statement {
        country_codes = var.blocked_countries
      }
    }

    visibility_config {
      cloudwatch_metrics_enabled = true
      metric_name                = "foo"
      sampled_requests_enabled   = true
    }
  }

  visibility_config {
    cloudwatch_metrics_enabled = true
    metric_name                = "foo"
    sampled_requests_enabled   = true
  }
}
