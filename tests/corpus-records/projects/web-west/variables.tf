variable "public_subnet_ids" {
  type = list(string)
}

variable "alb_security_group_id" {
  type = string
}
