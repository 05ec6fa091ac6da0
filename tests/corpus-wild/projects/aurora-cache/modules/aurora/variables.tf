variable "name" {
  description = "Cluster identifier; also names its groups, instances and alarms"
  type        = string
}

variable "engine" { default = "aurora-postgresql" }
variable "engine_version" { type = string }
variable "port" { default = null }
variable "database_name" { type = string }
variable "master_username" { type = string }

variable "instance_count" { default = 2 }
variable "instance_class" { default = "db.r6g.large" }

variable "instance_class_overrides" {
  description = "Instance class by instance index (\"0\" is the writer)"
  type        = map(string)
  default     = {}
}

variable "vpc_id" { type = string }
variable "subnet_ids" { type = list(string) }
variable "kms_key_id" { type = string }

variable "allowed_cidr_blocks" {
  description = "CIDR blocks allowed to connect, by name"
  type        = map(string)
  default     = {}
}

variable "allowed_security_groups" {
  description = "Security groups allowed to connect, by name"
  type        = map(string)
  default     = {}
}

variable "cluster_parameters" { type = map(string) }
variable "db_parameters" { type = map(string) }

variable "iam_database_authentication_enabled" { default = false }
variable "backup_retention_period" { default = 7 }
variable "preferred_backup_window" { default = "03:00-04:00" }
variable "preferred_maintenance_window" { default = "sun:05:00-sun:06:00" }
variable "deletion_protection" { default = false }
variable "performance_insights_enabled" { default = false }

variable "create_alarms" { default = true }
variable "alarm_actions" { type = list(string) }

variable "cpu_alarm_threshold" {
  description = "Average CPU (%) that raises the alarm; 80 when null"
  default     = null
}

variable "freeable_memory_threshold" {
  description = "Freeable memory (bytes) below which the alarm is raised"
  default     = 1073741824
}

variable "tags" { type = map(string) }

variable "cluster_tags" {
  description = "Tags of the cluster only, on top of tags"
  type        = map(string)
  default     = {}
}
