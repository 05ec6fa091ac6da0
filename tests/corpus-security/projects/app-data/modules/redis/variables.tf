variable "name" {
  type = string
}

variable "description" {
  type = string
}

variable "node_type" {
  type = string
}

variable "num_cache_clusters" {
  type    = number
  default = 2
}

variable "engine_version" {
  type    = string
  default = "7.1"
}

variable "parameters" {
  type    = map(string)
  default = {}
}

variable "subnet_ids" {
  type = list(string)
}

variable "security_group_ids" {
  type = list(string)
}

variable "kms_key_arn" {
  type = string
}

variable "snapshot_retention_limit" {
  type = number
}

variable "snapshot_window" {
  type    = string
  default = "02:00-03:00"
}

variable "maintenance_window" {
  type    = string
  default = "sun:04:00-sun:05:00"
}

variable "tags" {
  type    = map(string)
  default = {}
}
