resource "aws_security_group" "this" {
  count = var.create ? 1 : 0

  name                   = var.name
  description            = var.description
  vpc_id                 = var.vpc_id
  revoke_rules_on_delete = var.revoke_rules_on_delete

  tags = merge(
    var.tags,
    { "Name" = var.name },
  )
}

# One rule per element of ingress_with_cidr_blocks; cidr_blocks is a comma-separated string.
resource "aws_security_group_rule" "ingress_with_cidr_blocks" {
  count = var.create ? length(var.ingress_with_cidr_blocks) : 0

  security_group_id = aws_security_group.this[0].id
  type              = "ingress"

  cidr_blocks = split(",", lookup(var.ingress_with_cidr_blocks[count.index], "cidr_blocks", join(",", var.ingress_cidr_blocks)))
  description = lookup(var.ingress_with_cidr_blocks[count.index], "description", "Ingress Rule")
  from_port   = lookup(var.ingress_with_cidr_blocks[count.index], "from_port", 0)
  to_port     = lookup(var.ingress_with_cidr_blocks[count.index], "to_port", 0)
  protocol    = lookup(var.ingress_with_cidr_blocks[count.index], "protocol", "-1")
}

resource "aws_security_group_rule" "egress_with_cidr_blocks" {
  count = var.create ? length(var.egress_with_cidr_blocks) : 0

  security_group_id = aws_security_group.this[0].id
  type              = "egress"

  cidr_blocks = split(",", lookup(var.egress_with_cidr_blocks[count.index], "cidr_blocks", join(",", var.egress_cidr_blocks)))
  description = lookup(var.egress_with_cidr_blocks[count.index], "description", "Egress Rule")
  from_port   = lookup(var.egress_with_cidr_blocks[count.index], "from_port", 0)
  to_port     = lookup(var.egress_with_cidr_blocks[count.index], "to_port", 0)
  protocol    = lookup(var.egress_with_cidr_blocks[count.index], "protocol", "-1")
}
