variable "region" {
  description = "AWS region."
  type        = string
  default     = "us-east-1"
}

variable "project" {
  description = "Short project name, used in every resource name."
  type        = string
  default     = "orders"
}

variable "environment" {
  description = "Deployment environment (staging, prod)."
  type        = string
  default     = "staging"
}

variable "common_tags" {
  description = "Tags every resource carries."
  type        = map(string)
  default     = {}
}

variable "vpc_id" {
  description = "VPC the service runs in (owned by the network stack)."
  type        = string
}

variable "private_subnet_ids" {
  description = "Private subnets for instances, the ASG and the database."
  type        = list(string)
}

# --- API instance ----------------------------------------------------------

variable "api_ami" {
  description = "AMI of the API and bastion instances."
  type        = string
  default     = "ami-0c7217cdde317cfec"
}

variable "api_instance_type" {
  description = "Instance type of the API server."
  type        = string
  default     = "t3.small"
}

variable "api_disable_termination" {
  description = "Protect the API server against accidental termination."
  type        = bool
  default     = false
}

variable "api_allowed_cidrs" {
  description = "Networks allowed to reach the API on 443."
  type        = list(string)
  default     = ["10.0.0.0/16"]
}

variable "api_cpu_threshold" {
  description = "CPU percentage above which the API alarm fires."
  type        = number
  default     = 80
}

# --- Queue and worker ------------------------------------------------------

variable "queue_visibility_timeout" {
  description = "Visibility timeout of the orders queue, in seconds."
  type        = number
  default     = 30
}

variable "queue_retention_seconds" {
  description = "How long the orders queue keeps messages, in seconds."
  type        = number
  default     = 345600
}

variable "worker_memory_mb" {
  description = "Memory of the order worker function, in MB."
  type        = number
  default     = 512
}

variable "worker_timeout" {
  description = "Timeout of the order worker function, in seconds."
  type        = number
  default     = 30
}

variable "log_level" {
  description = "LOG_LEVEL of the order worker."
  type        = string
  default     = "INFO"
}

variable "worker_asg" {
  description = "Capacity of the worker Auto Scaling group."
  type = object({
    min_size         = number
    max_size         = number
    desired_capacity = number
  })
  default = {
    min_size         = 1
    max_size         = 4
    desired_capacity = 1
  }
}

# --- Storage and database --------------------------------------------------

variable "artifacts_versioning_status" {
  description = "Versioning status of the artifacts bucket (Enabled or Suspended)."
  type        = string
  default     = "Enabled"
}

variable "reports_data_class" {
  description = "DataClass tag of the reports bucket, read by the data scanner."
  type        = string
  default     = "internal"
}

variable "db_instance_class" {
  description = "Instance class of the orders database."
  type        = string
  default     = "db.t3.medium"
}

variable "db_allocated_storage" {
  description = "Allocated storage of the orders database, in GiB."
  type        = number
  default     = 100
}

variable "db_backup_retention_days" {
  description = "Days of automated backups kept for the orders database."
  type        = number
  default     = 7
}
