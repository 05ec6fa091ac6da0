variable "create_table" {
  type    = bool
  default = true
}

variable "name" {
  type    = string
  default = null
}

variable "billing_mode" {
  type    = string
  default = "PAY_PER_REQUEST"
}

variable "hash_key" {
  type    = string
  default = null
}

variable "range_key" {
  type    = string
  default = null
}

variable "read_capacity" {
  type    = number
  default = null
}

variable "write_capacity" {
  type    = number
  default = null
}

variable "table_class" {
  type    = string
  default = null
}

variable "deletion_protection_enabled" {
  type    = bool
  default = null
}

variable "attributes" {
  description = "Attribute definitions: maps of name and type"
  type        = list(map(string))
  default     = []
}

variable "point_in_time_recovery_enabled" {
  type    = bool
  default = false
}

variable "server_side_encryption_enabled" {
  type    = bool
  default = false
}

variable "server_side_encryption_kms_key_arn" {
  type    = string
  default = null
}

variable "ttl_enabled" {
  type    = bool
  default = false
}

variable "ttl_attribute_name" {
  type    = string
  default = ""
}

variable "tags" {
  type    = map(string)
  default = {}
}
