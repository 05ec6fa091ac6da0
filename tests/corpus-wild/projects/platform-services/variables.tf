variable "region" {
  type    = string
  default = "us-east-1"
}

variable "log_groups" {
  description = "Service log groups, encrypted with the data key."
  type        = set(string)
}

variable "log_retention_days" {
  type    = number
  default = 30
}

variable "app_managed_policies" {
  description = "AWS managed policies attached to the application role."
  type        = list(string)
}

variable "worker_count" {
  type = number
}

variable "node_groups" {
  type = map(object({
    instance_types = list(string)
    desired_size   = number
    min_size       = number
    max_size       = number
  }))
}

variable "db_parameters" {
  description = "Postgres parameters, by name."
  type        = map(string)
}

variable "rotation_days" {
  type    = number
  default = 30
}
