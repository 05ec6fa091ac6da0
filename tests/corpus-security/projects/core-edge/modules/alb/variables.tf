variable "name" {
  type = string
}

variable "vpc_id" {
  type = string
}

variable "subnet_ids" {
  type = list(string)
}

variable "security_groups" {
  type = list(string)
}

variable "certificate_arn" {
  type = string
}

variable "tls_policy" {
  type = string
}

variable "idle_timeout" {
  type    = number
  default = 60
}

variable "log_bucket" {
  type = string
}

variable "target_port" {
  type    = number
  default = 8080
}

variable "tags" {
  type    = map(string)
  default = {}
}
