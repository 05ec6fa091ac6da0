variable "name" {
  description = "Replication group id; also names its groups, nodes and alarms"
  type        = string
}

variable "description" { default = null }
variable "engine_version" { default = "7.1" }
variable "family" { default = "redis7" }
variable "node_type" { type = string }

variable "num_cache_clusters" {
  description = "Number of nodes: one primary, the rest replicas"
  type        = number
  default     = 2
}

variable "port" { default = 6379 }
variable "multi_az_enabled" { default = false }
variable "vpc_id" { type = string }
variable "subnet_ids" { type = list(string) }
variable "kms_key_id" { type = string }

variable "allowed_security_groups" {
  description = "Security groups allowed to connect, by name"
  type        = map(string)
  default     = {}
}

variable "parameters" { type = map(string) }
variable "snapshot_retention_limit" { default = 1 }
variable "snapshot_window" { default = "04:00-05:00" }
variable "maintenance_window" { default = "sun:06:00-sun:07:00" }

variable "create_alarms" { default = true }
variable "alarm_actions" { type = list(string) }
variable "cpu_alarm_threshold" { default = null }
variable "freeable_memory_threshold" { default = null }

variable "tags" { type = map(string) }
