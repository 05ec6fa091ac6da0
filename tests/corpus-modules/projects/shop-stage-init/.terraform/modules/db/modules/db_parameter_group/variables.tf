variable "create" {
  type    = bool
  default = true
}

variable "name" {
  type = string
}

variable "description" {
  type    = string
  default = null
}

variable "family" {
  type    = string
  default = null
}

variable "parameters" {
  type    = list(map(string))
  default = []
}

variable "tags" {
  type    = map(string)
  default = {}
}
