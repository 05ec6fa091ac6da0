locals {
  name = "acme-edge-${var.environment}"

  subnets = {
    "public-a"  = { cidr = "10.40.0.0/20", az = "us-east-1a", tier = "public", map_public_ip = true }
    "public-b"  = { cidr = "10.40.16.0/20", az = "us-east-1b", tier = "public", map_public_ip = true }
    "private-a" = { cidr = "10.40.32.0/20", az = "us-east-1a", tier = "private", map_public_ip = false }
    "private-b" = { cidr = "10.40.48.0/20", az = "us-east-1b", tier = "private", map_public_ip = false }
  }

  public_subnet_ids  = [for k, s in aws_subnet.this : s.id if local.subnets[k].tier == "public"]
  private_subnet_ids = [for k, s in aws_subnet.this : s.id if local.subnets[k].tier == "private"]

  app_instances = {
    "app-a" = { subnet = "private-a", instance_type = "t3.large" }
    "app-b" = { subnet = "private-b", instance_type = "t3.large" }
  }

  public_nacl_rules = {
    "https-in"     = { rule_number = 100, egress = false, protocol = "tcp", from_port = 443, to_port = 443 }
    "http-in"      = { rule_number = 110, egress = false, protocol = "tcp", from_port = 80, to_port = 80 }
    "ephemeral-in" = { rule_number = 120, egress = false, protocol = "tcp", from_port = 1024, to_port = 65535 }
    "all-out"      = { rule_number = 100, egress = true, protocol = "-1", from_port = 0, to_port = 0 }
  }
}
