variable "name" {
  description = "Queue name."
  type        = string
}

variable "visibility_timeout_seconds" {
  description = "How long a received message stays invisible to other consumers."
  type        = number
  default     = 30
}

variable "message_retention_seconds" {
  description = "How long SQS keeps a message (default 4 days)."
  type        = number
  default     = 345600
}

variable "delay_seconds" {
  description = "Delivery delay of every new message."
  type        = number
  default     = 0
}

variable "receive_wait_time_seconds" {
  description = "Long-polling wait time."
  type        = number
  default     = 20
}

variable "tags" {
  description = "Tags of the queue."
  type        = map(string)
  default     = {}
}
