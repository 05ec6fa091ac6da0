variable "region" {
  type    = string
  default = "us-east-1"
}

variable "project" {
  description = "Short name of the product, used as the prefix of every resource name."
  type        = string
}

variable "environment" {
  type = string
}

variable "private_subnet_ids" {
  description = "Private application subnets (one per availability zone)."
  type        = list(string)
}

variable "api_security_group_id" {
  description = "Security group of the API tasks, managed by the network stack."
  type        = string
}

variable "lambda_security_group_id" {
  type = string
}

variable "api_target_group_arn" {
  description = "Target group of the public load balancer that fronts the API service."
  type        = string
}

variable "api_image" {
  description = "Image of the API container, with an immutable tag."
  type        = string
}

variable "api_cpu" {
  type    = number
  default = 512
}

variable "api_memory" {
  type    = number
  default = 1024
}

variable "api_desired_count" {
  type    = number
  default = 2
}

variable "eks_version" {
  type    = string
  default = "1.30"
}

variable "eks_public_access_cidrs" {
  description = "Networks allowed to reach the public Kubernetes API endpoint (office and VPN egress)."
  type        = list(string)
}

variable "functions" {
  description = "Lambda functions of the platform, keyed by short name."
  type = map(object({
    handler           = string
    runtime           = optional(string, "python3.12")
    memory_size       = optional(number, 256)
    timeout           = optional(number, 10)
    function_url_auth = optional(string)
  }))
}

variable "lambda_artifact_bucket" {
  type = string
}

variable "lambda_release" {
  description = "Release whose build artifacts the functions run."
  type        = string
}

variable "uploads_bucket_arn" {
  description = "Bucket whose object-created events trigger the image resizer."
  type        = string
}

variable "api_logging_level" {
  description = "Execution logging level of the public REST API (OFF, ERROR or INFO)."
  type        = string
  default     = "ERROR"
}

variable "domain_name" {
  type = string
}

variable "acm_certificate_arn" {
  description = "Certificate for the CDN aliases (us-east-1)."
  type        = string
}

variable "static_bucket_regional_domain_name" {
  type = string
}

variable "alb_dns_name" {
  type = string
}

variable "cdn_logs_bucket_domain_name" {
  type = string
}

variable "cdn_minimum_protocol_version" {
  type    = string
  default = "TLSv1.2_2021"
}

variable "cdn_price_class" {
  type    = string
  default = "PriceClass_100"
}

variable "waf_rate_limit" {
  description = "Requests per source IP per 5 minutes before the CDN blocks it."
  type        = number
  default     = 2000
}

variable "rotation_lambda_arn" {
  description = "The shared rotation function for PostgreSQL credentials."
  type        = string
}

variable "secret_rotation_days" {
  type    = number
  default = 30
}
