environment = "prod"

vpc_cidr    = "10.40.0.0/16"
vpn_cidr    = "10.8.0.0/16"
office_cidr = "198.51.100.0/24"

certificate_arn  = "arn:aws:acm:us-east-1:123456789012:certificate/2b7e4c19-6a3d-4f80-9e15-c7d2a8f0b346"
alb_idle_timeout = 60
alb_log_bucket   = "acme-edge-prod-alb-logs"

flow_log_bucket_arn = "arn:aws:s3:::acme-edge-prod-flow-logs"

app_ami              = "ami-0c7d1f5e3a9b24680"
windows_ami          = "ami-0e9f3b7a5c1d46802"
app_instance_profile = "acme-edge-prod-app"
ebs_kms_key_arn      = "arn:aws:kms:us-east-1:123456789012:key/6f1d2c3b-8a4e-4b7f-9c20-3e5d7a9b1c84"
