variable "bucket_name" {
  description = "Globally unique bucket name."
  type        = string
}

variable "versioning_enabled" {
  description = "Keep every version of every object (true) or suspend versioning (false)."
  type        = bool
  default     = false
}

variable "tags" {
  description = "Tags of the bucket."
  type        = map(string)
  default     = {}
}
