terraform {
  required_version = ">= 1.5.0"

  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.40, < 7.0"
    }
  }
}

# CloudFront only accepts ACM certificates and CLOUDFRONT-scoped WAF web ACLs
# from us-east-1, so the whole stack lives there.
provider "aws" {
  region = "us-east-1"
}
