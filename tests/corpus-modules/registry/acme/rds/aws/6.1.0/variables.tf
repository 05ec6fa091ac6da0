variable "create_db_instance" {
  description = "Whether to create the database instance"
  type        = bool
  default     = true
}

variable "create_db_parameter_group" {
  description = "Whether to create a parameter group for the instance"
  type        = bool
  default     = true
}

variable "identifier" {
  description = "The name of the RDS instance"
  type        = string
}

variable "engine" {
  type    = string
  default = null
}

variable "engine_version" {
  type    = string
  default = null
}

variable "instance_class" {
  type    = string
  default = null
}

variable "allocated_storage" {
  type    = number
  default = null
}

variable "max_allocated_storage" {
  type    = number
  default = 0
}

variable "storage_type" {
  type    = string
  default = "gp3"
}

variable "storage_encrypted" {
  type    = bool
  default = true
}

variable "kms_key_id" {
  type    = string
  default = null
}

variable "db_name" {
  type    = string
  default = null
}

variable "username" {
  type    = string
  default = null
}

variable "manage_master_user_password" {
  type    = bool
  default = true
}

variable "port" {
  type    = number
  default = null
}

variable "vpc_security_group_ids" {
  type    = list(string)
  default = []
}

variable "db_subnet_group_name" {
  type    = string
  default = null
}

variable "parameter_group_name" {
  description = "Name of the parameter group to create, or of an existing one to use"
  type        = string
  default     = null
}

variable "parameter_group_description" {
  type    = string
  default = null
}

variable "family" {
  description = "The family of the parameter group"
  type        = string
  default     = null
}

variable "parameters" {
  description = "A list of parameter maps (name, value, optional apply_method)"
  type        = list(map(string))
  default     = []
}

variable "multi_az" {
  type    = bool
  default = false
}

variable "publicly_accessible" {
  type    = bool
  default = false
}

variable "backup_retention_period" {
  description = "Days to keep automated backups"
  type        = number
  default     = null
}

variable "backup_window" {
  type    = string
  default = null
}

variable "maintenance_window" {
  type    = string
  default = null
}

variable "deletion_protection" {
  type    = bool
  default = false
}

variable "skip_final_snapshot" {
  type    = bool
  default = false
}

variable "performance_insights_enabled" {
  type    = bool
  default = false
}

variable "auto_minor_version_upgrade" {
  type    = bool
  default = true
}

variable "tags" {
  type    = map(string)
  default = {}
}

variable "db_instance_tags" {
  type    = map(string)
  default = {}
}

variable "db_parameter_group_tags" {
  type    = map(string)
  default = {}
}
