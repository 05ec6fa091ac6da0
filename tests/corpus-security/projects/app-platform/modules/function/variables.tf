variable "name" {
  type = string
}

variable "handler" {
  type = string
}

variable "runtime" {
  type = string
}

variable "memory_size" {
  type = number
}

variable "timeout" {
  type = number
}

variable "artifact_bucket" {
  type = string
}

variable "artifact_key" {
  type = string
}

variable "subnet_ids" {
  type = list(string)
}

variable "security_group_ids" {
  type = list(string)
}

variable "environment" {
  type    = map(string)
  default = {}
}

variable "kms_key_arn" {
  description = "Key for the log group."
  type        = string
}

variable "log_retention_days" {
  type    = number
  default = 30
}

variable "function_url_auth_type" {
  description = "AWS_IAM or NONE to give the function a URL; null for none."
  type        = string
  default     = null
}

variable "tags" {
  type    = map(string)
  default = {}
}
