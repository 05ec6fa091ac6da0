variable "create" {
  type    = bool
  default = true
}

variable "name" {
  type = string
}

variable "fifo_queue" {
  type    = bool
  default = false
}

variable "visibility_timeout_seconds" {
  type    = number
  default = null
}

variable "message_retention_seconds" {
  type    = number
  default = null
}

variable "max_message_size" {
  type    = number
  default = null
}

variable "delay_seconds" {
  type    = number
  default = null
}

variable "receive_wait_time_seconds" {
  type    = number
  default = null
}

variable "kms_master_key_id" {
  type    = string
  default = null
}

variable "sqs_managed_sse_enabled" {
  type    = bool
  default = true
}

variable "tags" {
  type    = map(string)
  default = {}
}
