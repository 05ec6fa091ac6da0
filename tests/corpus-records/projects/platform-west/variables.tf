variable "environment" {
  type    = string
  default = "production"
}

variable "api_layers" {
  description = "Lambda layer versions attached to the production API."
  type        = list(string)
  default     = []
}

variable "nacl_rules" {
  description = "Inbound rules of the public subnets' network ACL."
  type = map(object({
    protocol  = string
    from_port = number
    to_port   = number
    cidr      = string
  }))
}
