variable "region" {
  type = string
}

variable "account_id" {
  type = string
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

# One entry per bucket. Unset fields take the team's defaults.
variable "buckets" {
  type = map(object({
    purpose         = string
    versioning      = optional(bool, true)
    access_logs     = optional(bool, true)
    noncurrent_days = optional(number, 90)
    expire_days     = optional(number)
    transitions     = optional(map(number), {})
  }))
}

variable "queues" {
  type = map(object({
    visibility_timeout = optional(number, 30)
    retention_seconds  = optional(number, 345600)
    max_message_size   = optional(number, 262144)
  }))
}

variable "environments" {
  description = "Per-environment settings handed to modules/service."
  type = map(object({
    deletion_protection = optional(bool, true)
    backup_days         = optional(number, 7)
    instance_class      = optional(string, "db.r6g.large")
    tls_policy          = optional(string, "ELBSecurityPolicy-TLS13-1-2-2021-06")
    idle_timeout        = optional(number, 60)
    ingress = optional(map(object({
      port        = number
      cidrs       = list(string)
      description = optional(string, "")
    })), {})
  }))
}
