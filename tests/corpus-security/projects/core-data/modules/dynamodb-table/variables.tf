variable "name" {
  type = string
}

variable "hash_key" {
  type = string
}

variable "range_key" {
  type    = string
  default = null
}

variable "attributes" {
  description = "Key attributes: name => type (S, N or B)."
  type        = map(string)
}

variable "deletion_protection" {
  type    = bool
  default = true
}

variable "point_in_time_recovery" {
  type    = bool
  default = true
}

variable "ttl_attribute" {
  type    = string
  default = null
}

variable "kms_key_arn" {
  type = string
}

variable "tags" {
  type    = map(string)
  default = {}
}
