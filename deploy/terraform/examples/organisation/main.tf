# One deployment for several accounts: member accounts forward their CloudTrail events to the
# central account's bus; us-east-1 forwards IAM, STS and CloudFront calls to the central region.
# The organisation trail's bucket lives in the log-archive account, which notifies the queue of each
# new log file (modules/trail-notification, applied with that account's credentials).

provider "aws" {
  region = "eu-west-1"
}

provider "aws" {
  alias  = "us_east_1"
  region = "us-east-1"
}

provider "aws" {
  alias  = "log_archive"
  region = "eu-west-1"
  assume_role {
    role_arn = "arn:aws:iam::456789012345:role/terraform"
  }
}

module "driftback" {
  source = "../.."

  ecs_task_role          = true
  forwarding_account_ids = ["210987654321", "345678901234"]

  trail_bucket_name       = "acme-org-trail"
  trail_bucket_account_id = "456789012345"
  trail_kms_key_arn       = "arn:aws:kms:eu-west-1:456789012345:key/11111111-2222-3333-4444-555555555555"

  state_bucket_names = ["acme-terraform-states"]
  state_kms_key_arns = ["arn:aws:kms:eu-west-1:123456789012:key/66666666-7777-8888-9999-000000000000"]

  alarm_actions = ["arn:aws:sns:eu-west-1:123456789012:ops-alerts"]
}

module "trail_notification" {
  source = "../../modules/trail-notification"
  providers = {
    aws = aws.log_archive
  }

  bucket_name = "acme-org-trail"
  queue_arn   = module.driftback.queue_arn
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
