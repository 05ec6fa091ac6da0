variable "org" {
  type = string
}

variable "environment" {
  type = string
}

variable "tags" {
  description = "Tags every baseline resource carries."
  type        = map(string)
  default     = {}
}

variable "password_policy" {
  description = "IAM account password policy (CIS 1.8-1.9)."
  type = object({
    minimum_length   = number
    max_age          = number
    reuse_prevention = number
  })
}

variable "console_users" {
  description = "IAM users (owned by the identity stack) who sign in to this account's console."
  type        = list(string)
  default     = []
}

variable "security_tooling_account_id" {
  description = "Central security tooling account that assumes the security-audit role."
  type        = string
}

variable "log_bucket_lifecycle" {
  type = object({
    transition_days = number
    expiration_days = number
    noncurrent_days = number
  })
}

variable "guardduty_enabled" {
  type    = bool
  default = true
}

variable "guardduty_finding_frequency" {
  type    = string
  default = "SIX_HOURS"
}

variable "guardduty_features" {
  description = "GuardDuty protection plans by feature name: ENABLED or DISABLED."
  type        = map(string)
  default     = {}
}
