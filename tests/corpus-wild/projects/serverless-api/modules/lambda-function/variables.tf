variable "create" {
  description = "Controls whether resources should be created"
  type        = bool
  default     = true
}

variable "function_name" {
  type = string
}

variable "description" {
  type    = string
  default = ""
}

variable "handler" {
  type = string
}

variable "runtime" {
  type    = string
  default = "python3.12"
}

variable "memory_size" {
  type    = number
  default = 128
}

variable "timeout" {
  type    = number
  default = 3
}

variable "reserved_concurrent_executions" {
  description = "Reserved concurrent executions; -1 removes the limit"
  type        = number
  default     = -1
}

variable "s3_bucket" {
  description = "S3 bucket holding the deployment package"
  type        = string
}

variable "s3_key" {
  description = "S3 key of the deployment package"
  type        = string
}

variable "environment_variables" {
  type    = map(string)
  default = {}
}

variable "tracing_mode" {
  type    = string
  default = "PassThrough"
}

variable "cloudwatch_logs_retention_in_days" {
  type    = number
  default = 14
}

variable "attach_policy_json" {
  description = "Whether policy_json should be added to the function's role"
  type        = bool
  default     = false
}

variable "policy_json" {
  type    = string
  default = null
}

variable "tags" {
  type    = map(string)
  default = {}
}

variable "function_tags" {
  description = "Additional tags for the Lambda function only"
  type        = map(string)
  default     = {}
}
