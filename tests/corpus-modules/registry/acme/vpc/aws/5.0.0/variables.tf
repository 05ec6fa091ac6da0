variable "create_vpc" {
  description = "Whether to create the VPC and everything in it"
  type        = bool
  default     = true
}

variable "name" {
  description = "Name used on every resource as an identifier"
  type        = string
  default     = ""
}

variable "cidr" {
  description = "The IPv4 CIDR block of the VPC"
  type        = string
  default     = "10.0.0.0/16"
}

variable "instance_tenancy" {
  type    = string
  default = "default"
}

variable "enable_dns_hostnames" {
  type    = bool
  default = true
}

variable "enable_dns_support" {
  type    = bool
  default = true
}

variable "azs" {
  description = "Availability zones, in the order of the subnet lists"
  type        = list(string)
  default     = []
}

variable "private_subnets" {
  type    = list(string)
  default = []
}

variable "public_subnets" {
  type    = list(string)
  default = []
}

variable "private_subnet_suffix" {
  type    = string
  default = "private"
}

variable "public_subnet_suffix" {
  type    = string
  default = "public"
}

variable "map_public_ip_on_launch" {
  type    = bool
  default = false
}

variable "tags" {
  description = "Tags for every resource"
  type        = map(string)
  default     = {}
}

variable "private_subnet_tags" {
  description = "Additional tags for every private subnet"
  type        = map(string)
  default     = {}
}

variable "public_subnet_tags" {
  description = "Additional tags for every public subnet"
  type        = map(string)
  default     = {}
}
