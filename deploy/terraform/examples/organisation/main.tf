# One deployment for several accounts: member accounts forward their CloudTrail events to the
# central account's bus; us-east-1 forwards IAM, STS and CloudFront calls to the central region.

provider "aws" {
  region = "eu-west-1"
}

provider "aws" {
  alias  = "us_east_1"
  region = "us-east-1"
}

module "driftback" {
  source = "../.."

  ecs_task_role          = true
  forwarding_account_ids = ["210987654321", "345678901234"]
}

data "aws_cloudwatch_event_bus" "central" {
  name = "default"
}

module "forward_global_services" {
  source = "../../modules/forwarder"
  providers = {
    aws = aws.us_east_1
  }

  central_bus_arn = data.aws_cloudwatch_event_bus.central.arn
}
