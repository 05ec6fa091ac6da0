# Production values for the services backend.
private_subnet_ids       = ["subnet-0a1b2c3d4e5f60718", "subnet-0c3d4e5f6a7b80921"]
db_security_group_id     = "sg-0d1e2f3a4b5c6d7e8"
worker_security_group_id = "sg-0e2f3a4b5c6d7e8f9"
worker_ami_id            = "ami-0c7217cdde317cfec"

# Raised from the 128 MB default after the March batch-size change.
order_processor_memory = 256
