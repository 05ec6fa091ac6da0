nacl_rules = {
  "100" = { protocol = "6", from_port = 443, to_port = 443, cidr = "0.0.0.0/0" }
  "110" = { protocol = "6", from_port = 80, to_port = 80, cidr = "0.0.0.0/0" }
  "120" = { protocol = "6", from_port = 1024, to_port = 65535, cidr = "0.0.0.0/0" }
}
