variable "tags" {
  description = "Tags for every network resource."
  type        = map(string)
  default = {
    Terraform = "true"
    Owner     = "platform"
  }
}
