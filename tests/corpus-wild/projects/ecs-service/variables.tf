variable "service_name" {
  description = "Name of the service."
  type        = string
}

variable "environment" {
  description = "Deployment environment."
  type        = string
}

variable "vpc_id" {
  type = string
}

variable "private_subnet_ids" {
  type = list(string)
}

variable "alb_security_group_id" {
  description = "The load balancer's group, allowed to reach the containers."
  type        = string
}

variable "image" {
  type = string
}

variable "desired_count" {
  type    = number
  default = 2
}

variable "min_capacity" {
  type    = number
  default = 2
}

variable "max_capacity" {
  type    = number
  default = 10
}

variable "cpu" {
  type    = number
  default = 512
}

variable "memory" {
  type    = number
  default = 1024
}

variable "log_retention_days" {
  type    = number
  default = 30
}

variable "alarm_cpu_threshold" {
  type    = number
  default = 80
}

variable "queue_visibility_timeout" {
  type    = number
  default = 60
}
