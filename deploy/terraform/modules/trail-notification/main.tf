# In the account that owns an organisation trail's bucket (the log-archive account): notify a
# driftback queue in another account of each new log file. Only the bucket's owner can configure
# its notifications, so this runs there, beside the bucket; the queue's policy (the main module
# with trail_bucket_name and trail_bucket_account_id) accepts the notifications.
#
# S3 keeps one notification configuration per bucket and this resource replaces all of it: when
# the bucket already notifies other targets, add the queue to the configuration that owns them
# instead of applying this module.

terraform {
  required_version = ">= 1.5.0"

  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.0, < 7.0"
    }
  }
}

variable "bucket_name" {
  description = "The organisation trail's bucket, in this account."
  type        = string
}

variable "prefix" {
  description = "Key prefix of the trail's log files (the main module's trail_prefix)."
  type        = string
  default     = "AWSLogs/"
}

variable "queue_arn" {
  description = "The driftback queue (the main module's queue_arn output)."
  type        = string
}

resource "aws_s3_bucket_notification" "trail" {
  bucket = var.bucket_name

  queue {
    id            = "driftback"
    queue_arn     = var.queue_arn
    events        = ["s3:ObjectCreated:*"]
    filter_prefix = var.prefix
  }
}

output "bucket_name" {
  description = "The bucket whose notifications now reach the queue."
  value       = aws_s3_bucket_notification.trail.bucket
}
