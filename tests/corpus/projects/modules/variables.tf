variable "region" {
  description = "AWS region for every resource of the shop."
  type        = string
  default     = "us-east-1"
}

variable "project" {
  description = "Short project name, used as a prefix for resource names."
  type        = string
  default     = "shop"
}

variable "environment" {
  description = "Deployment environment."
  type        = string
  default     = "prod"
}

variable "ami_id" {
  description = "AMI of the web server (Amazon Linux 2023)."
  type        = string
  default     = "ami-0c7217cdde317cfec"
}

variable "vpc_id" {
  description = "VPC the shop runs in."
  type        = string
  default     = "vpc-0a1b2c3d4e5f60718"
}

variable "subnet_id" {
  description = "Private subnet of the web server."
  type        = string
  default     = "subnet-0f1e2d3c4b5a69788"
}

variable "web_instance_type" {
  description = "Instance type of the storefront web server."
  type        = string
  default     = "t3.medium"
}

variable "emails_visibility_timeout" {
  description = "Visibility timeout, in seconds, of the outgoing e-mail queue."
  type        = number
  default     = 30
}

variable "alerts_topic_arn" {
  description = "SNS topic (managed by the platform team) that receives CloudWatch alarms."
  type        = string
  default     = "arn:aws:sns:us-east-1:123456789012:platform-alerts"
}
