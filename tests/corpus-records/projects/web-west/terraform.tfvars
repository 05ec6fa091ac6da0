public_subnet_ids     = ["subnet-0b1c2d3e4f5a60718", "subnet-0c2d3e4f5a6b70819"]
alb_security_group_id = "sg-0e1f2a3b4c5d60718"
