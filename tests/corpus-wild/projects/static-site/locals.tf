locals {
  project = "acme-web"
  name    = "${local.project}-${var.environment}"

  common_tags = merge(var.tags, {
    Project     = local.project
    Environment = var.environment
    ManagedBy   = "terraform"
  })

  hostnames = {
    apex = var.domain_name
    www  = "www.${var.domain_name}"
  }

  # One alias record per hostname and address family: apex-a, apex-aaaa, www-a, www-aaaa
  alias_records = {
    for pair in setproduct(keys(local.hostnames), ["A", "AAAA"]) :
    "${pair[0]}-${lower(pair[1])}" => {
      name = local.hostnames[pair[0]]
      type = pair[1]
    }
  }

  buckets = {
    site = {
      name             = "${local.name}-site"
      versioning       = true
      object_ownership = "BucketOwnerEnforced"
      tags             = { Purpose = "website-content" }
    }
    logs = {
      name             = "${local.name}-logs"
      versioning       = false
      object_ownership = "BucketOwnerPreferred" # CloudFront standard logs are delivered with ACLs
      tags             = { Purpose = "cdn-access-logs", DataClass = "internal" }
    }
  }

  s3_origin_id = "s3-${local.buckets.site.name}"

  # AWS managed policies
  cache_policy_ids = {
    optimized = "658327ea-f89d-4fab-a63d-7e88639e58f6" # Managed-CachingOptimized
    disabled  = "4135ea2d-6df8-44a3-9df3-4b5a84be39ad" # Managed-CachingDisabled
  }
  cors_s3_origin_request_policy_id = "88a5eaf4-2fd4-4709-b370-b4c650ea3fcf" # Managed-CORS-S3Origin

  content_security_policy = join("; ", [
    "default-src 'self'",
    "script-src 'self' https://plausible.io",
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data: https://images.ctfassets.net",
    "connect-src 'self' https://plausible.io",
    "frame-ancestors 'none'",
  ])
}
