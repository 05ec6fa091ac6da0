service_name          = "orders"
environment           = "prod"
vpc_id                = "vpc-0a1b2c3d4e5f60789"
private_subnet_ids    = ["subnet-0aa11bb22cc33dd44", "subnet-0ee55ff66aa77bb88"]
alb_security_group_id = "sg-0f00dba11a1b2c3d4"
image                 = "123456789012.dkr.ecr.eu-west-1.amazonaws.com/orders:1.42.0"

desired_count       = 3
alarm_cpu_threshold = 75
