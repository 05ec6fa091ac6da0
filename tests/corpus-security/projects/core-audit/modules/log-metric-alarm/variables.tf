variable "name" {
  type = string
}

variable "name_prefix" {
  type = string
}

variable "log_group_name" {
  type = string
}

variable "pattern" {
  type = string
}

variable "description" {
  type = string
}

variable "namespace" {
  type    = string
  default = "CISBenchmark"
}

variable "threshold" {
  type    = number
  default = 1
}

variable "period" {
  type    = number
  default = 300
}

variable "alarm_actions" {
  type = list(string)
}
