variable "streams" {
  description = "Kinesis data streams, by name."
  type = map(object({
    shards          = number
    retention_hours = optional(number, 24)
  }))
}
