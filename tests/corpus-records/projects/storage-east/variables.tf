variable "buckets" {
  description = "Buckets of the account, by name."
  type = map(object({
    versioning = optional(string, "Enabled")
    mfa_delete = optional(string, "Disabled")
    kms        = optional(bool, false)
  }))
}
