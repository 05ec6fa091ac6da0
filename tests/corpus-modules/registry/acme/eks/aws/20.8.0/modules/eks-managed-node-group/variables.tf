variable "create" {
  type    = bool
  default = true
}

variable "cluster_name" {
  type = string
}

variable "name" {
  type = string
}

variable "node_role_arn" {
  type = string
}

variable "subnet_ids" {
  type    = list(string)
  default = null
}

variable "min_size" {
  type    = number
  default = 0
}

variable "max_size" {
  type    = number
  default = 3
}

variable "desired_size" {
  type    = number
  default = 1
}

variable "instance_types" {
  type    = list(string)
  default = null
}

variable "capacity_type" {
  type    = string
  default = "ON_DEMAND"
}

variable "labels" {
  type    = map(string)
  default = null
}

variable "tags" {
  type    = map(string)
  default = {}
}
