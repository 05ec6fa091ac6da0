variable "create_bucket" {
  type    = bool
  default = true
}

variable "bucket" {
  type    = string
  default = null
}

variable "force_destroy" {
  type    = bool
  default = false
}

variable "tags" {
  type    = map(string)
  default = {}
}

variable "versioning" {
  description = "Versioning: enabled (bool) or status, and mfa_delete"
  type        = map(string)
  default     = {}
}

variable "server_side_encryption_configuration" {
  description = "The bucket's default encryption: a rule object as the S3 API writes it"
  type        = any
  default     = {}
}
