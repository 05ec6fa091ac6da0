project     = "shopfront"
environment = "prod"

private_subnet_ids       = ["subnet-0a1f3c5e7b9d20411", "subnet-0b2e4d6f8a0c31522", "subnet-0c3d5e7f9b1d42633"]
api_security_group_id    = "sg-0d4e6f8a0b2c4e611"
lambda_security_group_id = "sg-0e5f7a9b1c3d5f722"
api_target_group_arn     = "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/shopfront-prod-api/6d0ecf831eec9f09"

api_image         = "123456789012.dkr.ecr.us-east-1.amazonaws.com/shopfront/api:2.14.3"
api_desired_count = 3

eks_public_access_cidrs = ["198.51.100.0/24", "203.0.113.32/28"]

lambda_artifact_bucket = "northwind-lambda-artifacts-us-east-1"
lambda_release         = "2025.06.2"
uploads_bucket_arn     = "arn:aws:s3:::shopfront-prod-uploads"

functions = {
  "order-webhook" = {
    handler           = "webhook.handler"
    memory_size       = 256
    timeout           = 10
    function_url_auth = "AWS_IAM"
  }
  "image-resize" = {
    handler     = "resize.handler"
    memory_size = 1024
    timeout     = 60
  }
}

api_logging_level = "INFO"

domain_name                        = "shop.northwindgoods.com"
acm_certificate_arn                = "arn:aws:acm:us-east-1:123456789012:certificate/3f1c9a7e-52d4-4b8e-9c61-7a2e0d4b8f13"
static_bucket_regional_domain_name = "shopfront-prod-static.s3.us-east-1.amazonaws.com"
alb_dns_name                       = "shopfront-prod-alb-1418259067.us-east-1.elb.amazonaws.com"
cdn_logs_bucket_domain_name        = "northwind-cdn-logs.s3.amazonaws.com"

rotation_lambda_arn = "arn:aws:lambda:us-east-1:123456789012:function:SecretsManagerPostgreSQLRotationSingleUser"
