variable "project" {
  description = "Project name, used in names and tags"
  type        = string
}

variable "environment" {
  description = "Environment name, used in names and tags"
  type        = string
}

variable "vpc_id" {
  type = string
}

variable "subnet_ids" {
  type = list(string)
}

variable "ami_id" {
  description = "AMI for the API servers"
  type        = string
}

variable "default_instance_type" {
  description = "Instance type for API servers that do not set one"
  type        = string
  default     = "t3.large"
}

variable "api_instances" {
  description = "One entry per API server; every key is optional"
  type        = any
  default     = []
}

variable "queues" {
  description = "One entry per queue; name is required, the rest optional"
  type        = any
  default     = []
}
