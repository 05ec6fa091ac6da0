variable "org" {
  type = string
}

variable "environment" {
  type = string
}

variable "security_team_email" {
  type = string
}

variable "trail_log_retention_days" {
  description = "CIS 3.x evidence: keep the trail's CloudWatch copy for more than a year."
  type        = number
  default     = 365
}

variable "kms_keys" {
  description = "Customer managed keys of the account, keyed by purpose."
  type = map(object({
    description = string
    rotation    = optional(bool, true)
  }))
}

variable "config_bucket_name" {
  description = "Organisation bucket that receives AWS Config snapshots (owned by the log-archive account)."
  type        = string
}

variable "config_delivery_frequency" {
  type    = string
  default = "TwentyFour_Hours"
}

variable "guardduty_finding_frequency" {
  type    = string
  default = "SIX_HOURS"
}

variable "guardduty_features" {
  type = map(string)
}

variable "password_policy" {
  type = object({
    minimum_password_length        = number
    require_lowercase_characters   = bool
    require_uppercase_characters   = bool
    require_numbers                = bool
    require_symbols                = bool
    allow_users_to_change_password = bool
    max_password_age               = number
    password_reuse_prevention      = number
  })
}
