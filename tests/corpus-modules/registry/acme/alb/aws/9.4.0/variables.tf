variable "create" {
  type    = bool
  default = true
}

variable "name" {
  type    = string
  default = null
}

variable "load_balancer_type" {
  type    = string
  default = "application"
}

variable "internal" {
  type    = bool
  default = null
}

variable "security_groups" {
  type    = list(string)
  default = []
}

variable "subnets" {
  type    = list(string)
  default = null
}

variable "vpc_id" {
  type    = string
  default = null
}

variable "idle_timeout" {
  type    = number
  default = null
}

variable "enable_deletion_protection" {
  type    = bool
  default = true
}

variable "drop_invalid_header_fields" {
  type    = bool
  default = true
}

variable "enable_http2" {
  type    = bool
  default = null
}

variable "access_logs" {
  description = "bucket, enabled and prefix of the access logs"
  type        = map(string)
  default     = {}
}

variable "target_groups" {
  description = "Target groups by key: name, port, protocol, target_type, deregistration_delay, health_check, tags"
  type        = any
  default     = {}
}

variable "tags" {
  type    = map(string)
  default = {}
}
