variable "name" {
  description = "Role name."
  type        = string
}

variable "description" {
  type    = string
  default = null
}

variable "trusted_principal_arns" {
  description = "AWS principals allowed to assume the role."
  type        = list(string)
}

variable "require_mfa" {
  description = "Only allow sessions that signed in with MFA."
  type        = bool
  default     = true
}

variable "max_session_duration" {
  description = "Maximum session length, in seconds."
  type        = number
  default     = 3600
}

variable "managed_policy_arns" {
  description = "Managed policies attached to the role."
  type        = list(string)
  default     = []
}

variable "tags" {
  type    = map(string)
  default = {}
}
