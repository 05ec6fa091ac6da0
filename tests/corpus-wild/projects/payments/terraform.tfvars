project     = "Payments"
environment = "Prod"

vpc_id     = "vpc-0c7d9e1f3a5b68024"
subnet_ids = ["subnet-0d4e6f8a0b2c13579", "subnet-0e5f7a9b1c3d24680"]
ami_id     = "ami-0e86e20dae9224db8"

api_instances = [
  {
    instance_type = "m5.large"
    tags = {
      Role = "api-primary"
    }
  },
  {},
  {
    monitoring = true
  },
]

queues = [
  {
    name               = "Settlements"
    visibility_timeout = 120
  },
  {
    name = "Refunds"
  },
  {
    name      = "Chargebacks"
    retention = 1209600
    tags = {
      Team = "risk"
    }
  },
]
