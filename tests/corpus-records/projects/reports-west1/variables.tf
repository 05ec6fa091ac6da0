variable "db_allocated_storage" {
  type    = number
  default = 20
}

variable "db_max_allocated_storage" {
  type    = number
  default = 1000
}

variable "db_password" {
  type      = string
  sensitive = true
}
