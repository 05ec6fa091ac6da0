# Rules are inline blocks of the group in this major version: rules made beside it are revoked on
# the next apply.
resource "aws_security_group" "this" {
  count = var.create ? 1 : 0

  name                   = var.name
  description            = var.description
  vpc_id                 = var.vpc_id
  revoke_rules_on_delete = var.revoke_rules_on_delete

  dynamic "ingress" {
    for_each = var.ingress_with_cidr_blocks
    content {
      cidr_blocks = split(",", lookup(ingress.value, "cidr_blocks", join(",", var.ingress_cidr_blocks)))
      description = lookup(ingress.value, "description", "Ingress Rule")
      from_port   = lookup(ingress.value, "from_port", 0)
      to_port     = lookup(ingress.value, "to_port", 0)
      protocol    = lookup(ingress.value, "protocol", "-1")
    }
  }

  dynamic "egress" {
    for_each = var.egress_with_cidr_blocks
    content {
      cidr_blocks = split(",", lookup(egress.value, "cidr_blocks", join(",", var.egress_cidr_blocks)))
      description = lookup(egress.value, "description", "Egress Rule")
      from_port   = lookup(egress.value, "from_port", 0)
      to_port     = lookup(egress.value, "to_port", 0)
      protocol    = lookup(egress.value, "protocol", "-1")
    }
  }

  tags = merge(
    var.tags,
    { "Name" = var.name },
  )
}
