variable "zone_name" {
  type    = string
  default = "example.com"
}

variable "a_records" {
  description = "A records of the zone: name => addresses."
  type        = map(list(string))
  default     = {}
}
