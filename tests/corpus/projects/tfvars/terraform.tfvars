environment = "prod"

vpc_id             = "vpc-0d4e5f6a7b8c9d0e1"
private_subnet_ids = ["subnet-0a1a2b3c4d5e6f701", "subnet-0b2b3c4d5e6f70812"]

common_tags = {
  Team       = "orders"
  CostCenter = "cc-4411"
}

api_instance_type = "t3.medium"
api_cpu_threshold = 70

db_instance_class = "db.r6g.large"

worker_asg = {
  min_size         = 2
  max_size         = 8
  desired_capacity = 3
}
