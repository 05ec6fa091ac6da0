variable "kms_keys" {
  description = "Customer managed keys of the account, by short name."
  type = map(object({
    description  = string
    key_usage    = optional(string, "ENCRYPT_DECRYPT")
    key_spec     = optional(string, "SYMMETRIC_DEFAULT")
    rotation     = bool
    multi_region = optional(bool, false)
    enabled      = optional(bool, true)
    tags         = optional(map(string), {})
  }))
}

variable "deletion_window_in_days" {
  type    = number
  default = 30
}
