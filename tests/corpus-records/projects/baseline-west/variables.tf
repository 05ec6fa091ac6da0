variable "vpc_id" {
  type = string
}

variable "log_bucket_arn" {
  description = "The central log bucket."
  type        = string
}
