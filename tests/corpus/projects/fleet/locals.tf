locals {
  name_prefix = "fleet-${var.environment}"

  common_tags = {
    Project     = "fleet"
    Environment = var.environment
    ManagedBy   = "terraform"
  }

  # Long-running application servers, one per application.
  apps = {
    api = {
      instance_type           = "m6i.large"
      disable_api_termination = true
      cpu_threshold           = 70
      tags = {
        Team = "core"
        Tier = "backend"
      }
    }
    web = {
      instance_type           = "t3.medium"
      disable_api_termination = false
      cpu_threshold           = 80
      tags = {
        Team = "frontend"
        Tier = "edge"
      }
    }
    admin = {
      instance_type           = "t3.small"
      disable_api_termination = false
      cpu_threshold           = 85
      tags = {
        Team = "internal"
        Tier = "backoffice"
      }
    }
  }

  # Auto Scaling pools that drain the job queues.
  pools = {
    batch = {
      min_size         = 1
      max_size         = 6
      desired_capacity = 2
    }
    stream = {
      min_size         = 2
      max_size         = 8
      desired_capacity = 3
    }
  }
}
