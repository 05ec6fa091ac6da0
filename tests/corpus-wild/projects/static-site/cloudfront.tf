resource "aws_cloudfront_origin_access_control" "site" {
  name                              = "${local.name}-site"
  description                       = "Signed requests from CloudFront to ${local.buckets.site.name}"
  origin_access_control_origin_type = "s3"
  signing_behavior                  = "always"
  signing_protocol                  = "sigv4"
}

resource "aws_cloudfront_response_headers_policy" "security" {
  name    = "${local.name}-security-headers"
  comment = "Security headers for ${var.domain_name}"

  security_headers_config {
    strict_transport_security {
      access_control_max_age_sec = 31536000
      include_subdomains         = true
      preload                    = true
      override                   = true
    }

    content_type_options {
      override = true
    }

    frame_options {
      frame_option = "DENY"
      override     = true
    }

    referrer_policy {
      referrer_policy = "strict-origin-when-cross-origin"
      override        = true
    }

    content_security_policy {
      content_security_policy = local.content_security_policy
      override                = true
    }
  }
}

resource "aws_cloudfront_distribution" "site" {
  enabled             = true
  is_ipv6_enabled     = true
  http_version        = "http2and3"
  comment             = "${var.domain_name} static site"
  default_root_object = "index.html"
  aliases             = values(local.hostnames)
  price_class         = var.price_class
  web_acl_id          = var.enable_waf ? aws_wafv2_web_acl.cdn[0].arn : null

  origin {
    domain_name              = aws_s3_bucket.this["site"].bucket_regional_domain_name
    origin_id                = local.s3_origin_id
    origin_access_control_id = aws_cloudfront_origin_access_control.site.id
  }

  default_cache_behavior {
    target_origin_id           = local.s3_origin_id
    viewer_protocol_policy     = "redirect-to-https"
    allowed_methods            = ["GET", "HEAD", "OPTIONS"]
    cached_methods             = ["GET", "HEAD"]
    compress                   = true
    cache_policy_id            = local.cache_policy_ids.optimized
    origin_request_policy_id   = local.cors_s3_origin_request_policy_id
    response_headers_policy_id = aws_cloudfront_response_headers_policy.security.id
  }

  dynamic "ordered_cache_behavior" {
    for_each = var.cache_behaviors
    iterator = behavior

    content {
      path_pattern               = behavior.value.path_pattern
      target_origin_id           = local.s3_origin_id
      viewer_protocol_policy     = behavior.value.viewer_protocol_policy
      allowed_methods            = ["GET", "HEAD"]
      cached_methods             = ["GET", "HEAD"]
      compress                   = behavior.value.compress
      cache_policy_id            = local.cache_policy_ids[behavior.value.cache_policy]
      response_headers_policy_id = aws_cloudfront_response_headers_policy.security.id
    }
  }

  dynamic "custom_error_response" {
    for_each = var.error_responses

    content {
      error_code            = tonumber(custom_error_response.key)
      response_code         = custom_error_response.value.response_code
      response_page_path    = custom_error_response.value.page_path
      error_caching_min_ttl = custom_error_response.value.caching_min_ttl
    }
  }

  logging_config {
    bucket          = aws_s3_bucket.this["logs"].bucket_domain_name
    prefix          = "cloudfront/"
    include_cookies = false
  }

  restrictions {
    geo_restriction {
      restriction_type = "none"
    }
  }

  viewer_certificate {
    acm_certificate_arn      = aws_acm_certificate_validation.site.certificate_arn
    ssl_support_method       = "sni-only"
    minimum_protocol_version = var.minimum_protocol_version
  }

  tags = local.common_tags
}
