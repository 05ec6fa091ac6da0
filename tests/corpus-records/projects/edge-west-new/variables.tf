variable "blocked_countries" {
  type    = list(string)
  default = ["AF", "KP"]
}

variable "web_ingress" {
  description = "Inbound rules of the web tier."
  type = list(object({
    description = string
    port        = number
    cidr_blocks = list(string)
  }))
}
