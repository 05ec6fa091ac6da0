variable "region" {
  description = "AWS region of the core network."
  type        = string
  default     = "us-east-1"
}

variable "environment" {
  description = "Environment tag for the VPC and its subnets."
  type        = string
  default     = "prod"
}

variable "vpc_cidr" {
  description = "CIDR block of the core VPC."
  type        = string
  default     = "10.20.0.0/16"
}

variable "admin_cidr" {
  description = "Office range allowed to reach the bastion over SSH."
  type        = string
  default     = "203.0.113.0/24"
}

variable "vpn_cidr" {
  description = "Client VPN range allowed to reach the database."
  type        = string
  default     = "10.50.0.0/16"
}
