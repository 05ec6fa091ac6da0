variable "create" {
  type    = bool
  default = true
}

variable "create_function" {
  type    = bool
  default = true
}

variable "function_name" {
  type = string
}

variable "description" {
  type    = string
  default = ""
}

variable "lambda_role" {
  description = "The ARN of the role the function runs as"
  type        = string
}

variable "handler" {
  type    = string
  default = ""
}

variable "runtime" {
  type    = string
  default = ""
}

variable "memory_size" {
  type    = number
  default = 128
}

variable "timeout" {
  type    = number
  default = 3
}

variable "architectures" {
  type    = list(string)
  default = null
}

variable "publish" {
  type    = bool
  default = false
}

variable "s3_existing_package" {
  description = "The package in S3: bucket and key"
  type        = map(string)
  default     = null
}

variable "environment_variables" {
  type    = map(string)
  default = {}
}

variable "tracing_mode" {
  type    = string
  default = null
}

variable "use_existing_cloudwatch_log_group" {
  type    = bool
  default = false
}

variable "cloudwatch_logs_retention_in_days" {
  type    = number
  default = null
}

variable "cloudwatch_logs_kms_key_id" {
  type    = string
  default = null
}

variable "cloudwatch_logs_tags" {
  type    = map(string)
  default = {}
}

variable "tags" {
  type    = map(string)
  default = {}
}

variable "function_tags" {
  type    = map(string)
  default = {}
}
