# driftback as an ECS Fargate service in the account it watches, reading its git token and the
# knowledge base's URL from Secrets Manager.

provider "aws" {
  region = "eu-west-1"
}

module "driftback" {
  source = "../.."

  name               = "driftback"
  create_ecs_service = true
  ecs_cluster_arn    = "arn:aws:ecs:eu-west-1:123456789012:cluster/platform"
  subnet_ids         = ["subnet-0a1b2c3d4e5f60718", "subnet-0f1e2d3c4b5a69788"]
  security_group_ids = ["sg-0123456789abcdef0"]
  # Pinned by digest: the bytes that were tested (docs/deploy.md, "The image").
  image         = "123456789012.dkr.ecr.eu-west-1.amazonaws.com/driftback@sha256:0000000000000000000000000000000000000000000000000000000000000000"
  desired_count = 2
  alarm_actions = ["arn:aws:sns:eu-west-1:123456789012:ops-alerts"]

  environment = {
    DRIFTBACK_SERVE__REPO_URL          = "https://github.com/example-org/infrastructure.git"
    DRIFTBACK_PUBLISH__MODE            = "pull-request"
    DRIFTBACK_PUBLISH__REPOSITORY      = "example-org/infrastructure"
    DRIFTBACK_SERVE__WORKDIR           = "/var/lib/driftback/infra"
    DRIFTBACK_SERVE__STATE_PATH        = "terraform.tfstate"
    DRIFTBACK_GROUP__QUIET_WINDOW_SECS = "120"
  }

  secrets = {
    GITHUB_TOKEN             = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:driftback/github-token-AbCdEf"
    DRIFTBACK_STORE__URL     = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:driftback/database-url-GhIjKl"
    DRIFTBACK_WEBHOOK_SECRET = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:driftback/webhook-secret-MnOpQr"
  }

  tags = {
    Service = "driftback"
  }
}

output "queue_url" {
  value = module.driftback.queue_url
}
