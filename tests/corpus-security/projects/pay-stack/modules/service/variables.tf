variable "name" {
  type = string
}

variable "environment" {
  type = string
}

variable "settings" {
  description = "One entry of the root's var.environments."
  type = object({
    deletion_protection = bool
    backup_days         = number
    instance_class      = string
    tls_policy          = string
    idle_timeout        = number
    ingress = map(object({
      port        = number
      cidrs       = list(string)
      description = string
    }))
  })
}

variable "vpc_id" {
  type = string
}

variable "subnet_ids" {
  type = list(string)
}

variable "certificate_arn" {
  type = string
}

variable "log_bucket" {
  type = string
}

variable "kms_key_arn" {
  type = string
}
