variable "queues" {
  description = "The event queues, by name"
  type = map(object({
    visibility_timeout_seconds = optional(number, 30)
    message_retention_seconds  = optional(number, 345600)
    delay_seconds              = optional(number, 0)
  }))
}
