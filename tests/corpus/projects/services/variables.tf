variable "aws_region" {
  description = "Region the services backend runs in."
  type        = string
  default     = "us-east-1"
}

variable "environment" {
  description = "Deployment environment name, used in tags."
  type        = string
  default     = "prod"
}

variable "artifacts_bucket" {
  description = "Bucket holding the Lambda deployment packages (managed by the CI project)."
  type        = string
  default     = "acme-services-artifacts"
}

variable "reports_bucket" {
  description = "Bucket the report generator writes to (managed by the data project)."
  type        = string
  default     = "acme-services-reports"
}

variable "order_processor_memory" {
  description = "Memory (MB) of the order-processor function."
  type        = number
  default     = 128
}

variable "db_instance_class" {
  description = "Instance class of the services database."
  type        = string
  default     = "db.t3.medium"
}

variable "db_allocated_storage" {
  description = "Allocated storage (GiB) of the services database."
  type        = number
  default     = 50
}

variable "private_subnet_ids" {
  description = "Private subnets for the database and the worker fleet."
  type        = list(string)
}

variable "db_security_group_id" {
  description = "Security group attached to the database."
  type        = string
}

variable "worker_security_group_id" {
  description = "Security group attached to the worker instances."
  type        = string
}

variable "worker_ami_id" {
  description = "AMI of the worker instances."
  type        = string
}

variable "worker_instance_type" {
  description = "Instance type of the worker instances."
  type        = string
  default     = "t3.small"
}

variable "alert_email" {
  description = "Address subscribed to the ops-alerts topic."
  type        = string
  default     = "oncall@example.com"
}

locals {
  common_tags = {
    Project     = "services"
    Environment = var.environment
    Team        = "backend"
    ManagedBy   = "terraform"
  }
}
