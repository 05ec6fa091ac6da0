environment = "prod"

vpc_id = "vpc-0a3c5e7f9b1d24680"
database_subnet_ids = [
  "subnet-0b1d3f5a7c9e24681",
  "subnet-0c2e4a6b8d0f35792",
  "subnet-0d3f5b7c9e1a46803",
]

app_security_group_id = "sg-0e4a6c8e0a2b57914"

trusted_cidrs = {
  vpn     = "10.8.0.0/16"
  bastion = "10.20.250.0/28"
}

aurora_engine_version = "16.4"

instance_parameters = {
  orders = {
    random_page_cost = "1.1"
    work_mem         = "65536"
  }
  inventory = {
    work_mem = "16384"
  }
}

reporting_rotation_days = {
  orders    = 30
  inventory = 30
}

rotation_lambda_arn = "arn:aws:lambda:us-east-1:123456789012:function:shop-prod-rotate-postgres"
