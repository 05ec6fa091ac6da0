variable "vpc_id" {
  type    = string
  default = "vpc-a1a044c7"
}
