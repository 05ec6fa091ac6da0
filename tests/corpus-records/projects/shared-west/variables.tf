variable "tables" {
  description = "DynamoDB tables, by name."
  type = map(object({
    hash_key       = string
    range_key      = optional(string)
    read_capacity  = number
    write_capacity = number
    attributes     = map(string)
  }))
}

variable "trail_name" {
  type = string
}

variable "trail_bucket" {
  type = string
}

variable "trail_log_retention_days" {
  type    = number
  default = 730
}
