variable "project" {
  type = string
}

variable "environment" {
  type = string
}

variable "artifacts_bucket" {
  type = string
}

variable "release" {
  type = string
}

variable "tracing_mode" {
  type    = string
  default = "PassThrough"
}

variable "default_log_retention_days" {
  description = "Retention of the API access logs and of function logs whose entry sets none"
  type        = number
  default     = 30
}

variable "functions" {
  description = "Lambda functions, keyed by short name"
  type = map(object({
    description          = string
    handler              = string
    runtime              = optional(string, "python3.12")
    memory_size          = optional(number, 256)
    timeout              = optional(number, 10)
    reserved_concurrency = optional(number, -1)
    log_retention_days   = optional(number)
    environment          = optional(map(string), {})
    tags                 = optional(map(string), {})
    function_tags        = optional(map(string), {})
  }))
}

variable "routes" {
  description = "HTTP API routes, keyed by route key, each served by one function"
  type = map(object({
    function           = string
    authorization_type = optional(string, "NONE")
  }))
}

variable "cors_allow_origins" {
  description = "Origins allowed to call the API from a browser"
  type        = list(string)
}

variable "api_throttling" {
  description = "Default route throttling of the $default stage"
  type = object({
    burst_limit = number
    rate_limit  = number
  })
}

variable "tables" {
  description = "DynamoDB tables, keyed by short name"
  type = map(object({
    hash_key                 = string
    range_key                = optional(string)
    attributes               = map(string)
    ttl_attribute            = optional(string)
    point_in_time_recovery   = optional(bool, true)
    deletion_protection      = optional(bool, false)
    global_secondary_indexes = optional(map(object({ hash_key = string, range_key = optional(string) })), {})
    tags                     = optional(map(string), {})
  }))
}

variable "queues" {
  description = "SQS queues, each with its own dead-letter queue; consumer names a function"
  type = map(object({
    consumer              = optional(string)
    visibility_timeout    = optional(number, 30)
    retention_seconds     = optional(number, 345600)
    dlq_retention_seconds = optional(number, 1209600)
    max_receive_count     = optional(number, 5)
    batch_size            = optional(number, 10)
    batching_window       = optional(number, 0)
    tags                  = optional(map(string), {})
  }))
}
