variable "region" {
  description = "AWS region"
  type        = string
  default     = "us-east-1"
}

variable "bucket_prefix" {
  description = "Prefix of every bucket name"
  type        = string
  default     = "acme-datalake"
}

variable "environment" {
  description = "Deployment environment (dev, staging, prod)"
  type        = string
}

variable "buckets" {
  description = "Data lake buckets, keyed by zone name"
  type = map(object({
    versioning      = bool
    kms_key_arn     = optional(string)
    noncurrent_days = optional(number)
    expiration_days = optional(number)
    tags            = optional(map(string), {})
  }))
}
