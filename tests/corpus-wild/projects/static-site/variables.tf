variable "environment" {
  description = "Deployment environment"
  type        = string
}

variable "domain_name" {
  description = "Apex domain of the site; the Route 53 zone of the same name must exist"
  type        = string
}

variable "price_class" {
  description = "CloudFront price class"
  type        = string
  default     = "PriceClass_100"
}

variable "minimum_protocol_version" {
  description = "Minimum TLS version CloudFront negotiates with viewers"
  type        = string
  default     = "TLSv1.2_2021"
}

variable "cache_behaviors" {
  description = "Ordered cache behaviours in front of the default one, evaluated top to bottom"
  type = list(object({
    path_pattern           = string
    cache_policy           = optional(string, "optimized")
    compress               = optional(bool, true)
    viewer_protocol_policy = optional(string, "redirect-to-https")
  }))
  default = []
}

variable "error_responses" {
  description = "Custom error responses, keyed by the HTTP status code CloudFront receives"
  type = map(object({
    response_code   = number
    page_path       = string
    caching_min_ttl = optional(number, 10)
  }))
  default = {}
}

variable "cors_allowed_origins" {
  description = "Origins allowed to fetch site assets cross-origin"
  type        = list(string)
  default     = []
}

variable "log_retention_days" {
  description = "Days CloudFront access logs are kept"
  type        = number
  default     = 90
}

variable "enable_waf" {
  description = "Create a WAFv2 web ACL and attach it to the distribution"
  type        = bool
  default     = false
}

variable "waf_rate_limit" {
  description = "Requests per 5 minutes per IP before the rate-based rule blocks"
  type        = number
  default     = 2000
}

variable "dns_records" {
  description = "Additional records in the zone; name is relative to the apex (\"\" for the apex itself)"
  type = map(object({
    name    = string
    type    = string
    ttl     = optional(number, 300)
    records = list(string)
  }))
  default = {}
}

variable "tags" {
  description = "Tags added to every resource"
  type        = map(string)
  default     = {}
}
