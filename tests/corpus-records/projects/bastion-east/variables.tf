variable "admin_cidrs" {
  description = "Office ranges allowed to reach the bastion over SSH."
  type        = list(string)
  default     = ["198.51.100.0/24"]
}
