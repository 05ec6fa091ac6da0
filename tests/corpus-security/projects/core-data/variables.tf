variable "region" {
  type    = string
  default = "us-east-1"
}

variable "environment" {
  type = string
}

variable "app" {
  type = string
}

variable "data_kms_key_arn" {
  description = "Customer managed key for everything this stack stores (owned by the core-audit stack)."
  type        = string
}

variable "buckets" {
  description = "Buckets of the ledger, keyed by purpose."
  type = map(object({
    data_class    = string
    versioning    = string
    mfa_delete    = optional(string, "Disabled")
    sse_algorithm = optional(string, "aws:kms")
  }))
}

variable "partner_reader_role_arn" {
  description = "Role of the reconciliation partner that reads the daily exports."
  type        = string
}

variable "db_subnet_ids" {
  type = list(string)
}

variable "db_security_group_ids" {
  type = list(string)
}

variable "rds_monitoring_role_arn" {
  type = string
}

variable "db_instance_class" {
  type    = string
  default = "db.r6g.large"
}

variable "ledger_backup_retention_days" {
  type    = number
  default = 14
}

variable "reporting_backup_retention_days" {
  type    = number
  default = 7
}

variable "reporting_deletion_protection" {
  description = "The reporting copy is rebuilt from the ledger's snapshots; it may be dropped."
  type        = bool
  default     = true
}

variable "aurora_instance_count" {
  type    = number
  default = 2
}

variable "aurora_instance_class" {
  type    = string
  default = "db.r6g.large"
}

variable "aurora_backup_retention_days" {
  type    = number
  default = 7
}

variable "tables" {
  description = "DynamoDB tables, keyed by short name."
  type = map(object({
    hash_key               = string
    range_key              = optional(string)
    attributes             = map(string)
    deletion_protection    = optional(bool, true)
    point_in_time_recovery = optional(bool, true)
    ttl_attribute          = optional(string)
  }))
}
