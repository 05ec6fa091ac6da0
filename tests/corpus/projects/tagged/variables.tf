variable "region" {
  description = "AWS region for the build platform."
  type        = string
  default     = "us-east-1"
}

variable "environment" {
  description = "Deployment environment, applied to every resource through default_tags."
  type        = string
  default     = "production"
}

variable "artifact_bucket_name" {
  description = "Name of the bucket that stores build artifacts."
  type        = string
  default     = "acme-build-artifacts"
}

variable "log_retention_days" {
  description = "Days after which S3 access logs expire."
  type        = number
  default     = 90
}

variable "builder_instance_type" {
  description = "Instance type of the build runner."
  type        = string
  default     = "t3.medium"
}

variable "builder_subnet_id" {
  description = "Private subnet the build runner lives in."
  type        = string
  default     = "subnet-0a6f2d8c4b1e93752"
}

variable "builder_security_group_ids" {
  description = "Security groups attached to the build runner."
  type        = list(string)
  default     = ["sg-05e9b1d7c3f2a4869"]
}
