locals {
  tags = {
    Environment = "prod"
    Team        = "edge"
  }
}

module "alb" {
  source  = "registry.acme.test/acme/alb/aws"
  version = "~> 9.0"

  name     = "edge-public"
  internal = false
  vpc_id   = "vpc-0e1d2c3b4a5960001"
  subnets  = ["subnet-0e1d2c3b4a5960011", "subnet-0e1d2c3b4a5960012"]

  security_groups = ["sg-0e1d2c3b4a5960021"]
  idle_timeout    = 60

  target_groups = {
    api = {
      name                 = "edge-api"
      port                 = 8080
      protocol             = "HTTP"
      target_type          = "ip"
      deregistration_delay = 60
      health_check = {
        path    = "/health"
        matcher = "200"
      }
    }
    web = {
      name        = "edge-web"
      port        = 80
      protocol    = "HTTP"
      target_type = "instance"
      health_check = {
        path    = "/"
        matcher = "200-399"
      }
    }
  }

  tags = local.tags
}
