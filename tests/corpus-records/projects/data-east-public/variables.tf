variable "databases" {
  description = "RDS instances, by identifier."
  type = map(object({
    engine                = string
    engine_version        = string
    instance_class        = string
    allocated_storage     = number
    max_allocated_storage = optional(number, 0)
    deletion_protection   = bool
    publicly_accessible   = optional(bool, false)
  }))
}

variable "alarm_topic_arn" {
  type    = string
  default = "arn:aws:sns:us-east-1:123456789012:data-alerts"
}
