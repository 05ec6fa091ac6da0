variable "queues" {
  type = map(object({
    visibility_timeout = number
    retention_seconds  = number
  }))
}

variable "admins" {
  description = "Members of the admin group; granted in review only."
  type        = list(string)
  default     = []
}
