locals {
  name       = "${var.project}-${var.environment}"
  account_id = data.aws_caller_identity.current.account_id

  common_tags = {
    Team        = "storefront"
    Environment = var.environment
    CostCenter  = "cc-4410"
  }

  # Container images built by CI. The legacy batch image predates the
  # image-hygiene rules and is still pushed with a moving `latest` tag.
  ecr_repositories = {
    api = {
      scan_on_push   = true
      tag_mutability = "IMMUTABLE"
      keep_images    = 50
    }
    worker = {
      scan_on_push   = true
      tag_mutability = "IMMUTABLE"
      keep_images    = 50
    }
    legacy-batch = {
      scan_on_push   = false
      tag_mutability = "MUTABLE"
      keep_images    = 10
    }
  }

  # Managed CloudFront policies.
  cache_policy_caching_optimized           = "658327ea-f89d-4fab-a63d-7e88639e58f6"
  cache_policy_caching_disabled            = "4135ea2d-6df8-44a3-9df3-4b5a84be39ad"
  origin_request_policy_all_viewer_no_host = "b689b0a8-53d0-40ab-baf2-68738e2966ac"

  static_origin_id = "static-s3"
  api_origin_id    = "api-alb"
}
