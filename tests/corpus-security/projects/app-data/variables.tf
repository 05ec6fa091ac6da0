variable "region" {
  type    = string
  default = "eu-west-1"
}

variable "name_prefix" {
  type = string
}

variable "data_subnet_ids" {
  description = "Isolated data subnets, one per availability zone."
  type        = list(string)
}

variable "security_group_ids" {
  description = "Security groups of the data stores, managed by the network stack, by store."
  type        = map(string)
}

variable "cache_node_type" {
  type    = string
  default = "cache.r7g.large"
}

variable "cache_snapshot_retention_days" {
  type    = number
  default = 7
}

variable "search_master_role_arn" {
  description = "IAM role mapped to the OpenSearch all_access role."
  type        = string
}

variable "search_reader_role_arn" {
  description = "Role of the catalogue service, allowed to query the search domain."
  type        = string
}

variable "warehouse_node_count" {
  type    = number
  default = 2
}

variable "warehouse_snapshot_retention_days" {
  type    = number
  default = 7
}

variable "queues" {
  description = "Work queues of the fulfilment services, by short name."
  type = map(object({
    visibility_timeout_seconds = optional(number, 30)
    message_retention_seconds  = optional(number, 345600)
    receive_wait_time_seconds  = optional(number, 20)
  }))
}

variable "docdb_backup_retention_days" {
  type    = number
  default = 7
}

variable "alert_email" {
  type = string
}
