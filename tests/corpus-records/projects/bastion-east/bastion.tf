resource "aws_security_group" "bastion" {
  name        = "bastion"
  description = "SSH from the office"
  vpc_id      = "vpc-03a7c1e5d9b2f4a6c"
}

resource "aws_vpc_security_group_ingress_rule" "ssh" {
  for_each = toset(var.admin_cidrs)

  security_group_id = aws_security_group.bastion.id
  ip_protocol       = "tcp"
  from_port         = 22
  to_port           = 22
  cidr_ipv4         = each.value
}
