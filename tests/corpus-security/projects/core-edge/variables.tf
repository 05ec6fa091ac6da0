variable "environment" {
  type = string
}

variable "vpc_cidr" {
  type = string
}

variable "vpn_cidr" {
  description = "Client VPN address pool; the only source allowed to reach admin ports."
  type        = string
}

variable "office_cidr" {
  description = "Head office egress range."
  type        = string
}

variable "certificate_arn" {
  type = string
}

variable "tls_policy" {
  type    = string
  default = "ELBSecurityPolicy-TLS13-1-2-2021-06"
}

variable "alb_idle_timeout" {
  type    = number
  default = 60
}

variable "alb_log_bucket" {
  type = string
}

variable "flow_log_bucket_arn" {
  type = string
}

variable "app_ami" {
  type = string
}

variable "windows_ami" {
  type = string
}

variable "app_instance_profile" {
  type = string
}

variable "ebs_kms_key_arn" {
  type = string
}
