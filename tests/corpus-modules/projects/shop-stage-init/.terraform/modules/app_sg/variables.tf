variable "create" {
  description = "Whether to create the security group and its rules"
  type        = bool
  default     = true
}

variable "name" {
  type = string
}

variable "description" {
  type    = string
  default = "Security Group managed by Terraform"
}

variable "vpc_id" {
  type    = string
  default = null
}

variable "revoke_rules_on_delete" {
  type    = bool
  default = false
}

variable "ingress_cidr_blocks" {
  description = "CIDR blocks for ingress rules that name none"
  type        = list(string)
  default     = []
}

variable "ingress_with_cidr_blocks" {
  description = "Ingress rules: maps of from_port, to_port, protocol, cidr_blocks (comma-separated) and description"
  type        = list(map(string))
  default     = []
}

variable "egress_cidr_blocks" {
  type    = list(string)
  default = ["0.0.0.0/0"]
}

variable "egress_with_cidr_blocks" {
  type    = list(map(string))
  default = []
}

variable "tags" {
  type    = map(string)
  default = {}
}
