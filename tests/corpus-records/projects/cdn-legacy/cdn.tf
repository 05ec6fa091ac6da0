# The marketing site: a static bucket website behind CloudFront, with the custom
# certificate uploaded to IAM years ago.
resource "aws_cloudfront_distribution" "site" {
  enabled             = true
  comment             = var.distribution_comment
  default_root_object = "index.html"
  aliases             = var.aliases
  price_class         = "PriceClass_All"

  origin {
    origin_id   = "Images"
    domain_name = "myotherawsbucket.s3-website-us-west-2.amazonaws.com"

    custom_origin_config {
      http_port              = 80
      https_port             = 443
      origin_protocol_policy = "http-only"
      origin_ssl_protocols   = ["TLSv1.2"]
    }
  }

  default_cache_behavior {
    target_origin_id       = "Images"
    allowed_methods        = ["GET", "HEAD"]
    cached_methods         = ["GET", "HEAD"]
    viewer_protocol_policy = "redirect-to-https"
    min_ttl                = 300

    forwarded_values {
      query_string = false

      cookies {
        forward = "none"
      }
    }
  }

  restrictions {
    geo_restriction {
      restriction_type = "none"
    }
  }

  viewer_certificate {
    iam_certificate_id = var.iam_certificate_id
    ssl_support_method = "sni-only"
  }
}
