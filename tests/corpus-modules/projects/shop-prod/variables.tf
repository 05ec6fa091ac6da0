variable "db_instance_class" {
  description = "Instance class of the orders database"
  type        = string
}

variable "db_backup_retention_days" {
  description = "Days of automated backups the orders database keeps"
  type        = number
  default     = 7
}
