variable "region" { default = "us-east-1" }
variable "environment" { type = string }
variable "vpc_id" { type = string }
variable "database_subnet_ids" { type = list(string) }

variable "app_security_group_id" {
  description = "Security group of the EKS nodes that run the shop services"
  type        = string
}

variable "trusted_cidrs" {
  description = "Networks outside the VPC allowed to reach the databases, by name"
  type        = map(string)
}

variable "aurora_engine_version" { type = string }

variable "instance_parameters" {
  description = "DB (instance) parameter group parameters, by cluster"
  type        = map(map(string))
  default     = {}
}

variable "reporting_rotation_days" {
  description = "Rotation period (days) of each cluster's reporting-user secret"
  type        = map(number)
}

variable "rotation_lambda_arn" { type = string }
