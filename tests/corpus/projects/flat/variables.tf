variable "region" {
  description = "AWS region everything in this project lives in."
  type        = string
  default     = "us-east-1"
}

variable "reporting_db_password" {
  description = "Master password of the reporting database, from the CI secret store"
  type        = string
  sensitive   = true
}
