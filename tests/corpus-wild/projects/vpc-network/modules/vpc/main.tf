locals {
  vpc_id    = try(aws_vpc.this[0].id, "")
  nat_count = var.create_vpc && var.enable_nat_gateway ? (var.single_nat_gateway ? 1 : length(var.azs)) : 0
}

resource "aws_vpc" "this" {
  count = var.create_vpc ? 1 : 0

  cidr_block           = var.cidr
  enable_dns_hostnames = var.enable_dns_hostnames
  enable_dns_support   = true

  tags = merge({ Name = var.name }, var.tags)
}

resource "aws_subnet" "public" {
  count = var.create_vpc ? length(var.public_subnets) : 0

  vpc_id                  = local.vpc_id
  cidr_block              = element(var.public_subnets, count.index)
  availability_zone       = element(var.azs, count.index)
  map_public_ip_on_launch = var.map_public_ip_on_launch

  tags = merge(
    { Name = format("%s-public-%s", var.name, element(var.azs, count.index)) },
    var.tags,
    var.public_subnet_tags,
  )
}

resource "aws_subnet" "private" {
  count = var.create_vpc ? length(var.private_subnets) : 0

  vpc_id            = local.vpc_id
  cidr_block        = element(var.private_subnets, count.index)
  availability_zone = element(var.azs, count.index)

  tags = merge({ Name = format("%s-private-%s", var.name, element(var.azs, count.index)) }, var.tags)
}

resource "aws_internet_gateway" "this" {
  count = var.create_vpc && length(var.public_subnets) > 0 ? 1 : 0

  vpc_id = local.vpc_id

  tags = merge({ Name = var.name }, var.tags)
}

resource "aws_route_table" "public" {
  count = var.create_vpc && length(var.public_subnets) > 0 ? 1 : 0

  vpc_id = local.vpc_id

  tags = merge({ Name = "${var.name}-public" }, var.tags)
}

resource "aws_route" "public_internet_gateway" {
  count = var.create_vpc && length(var.public_subnets) > 0 ? 1 : 0

  route_table_id         = aws_route_table.public[0].id
  destination_cidr_block = "0.0.0.0/0"
  gateway_id             = aws_internet_gateway.this[0].id
}

resource "aws_route_table" "private" {
  count = var.create_vpc ? length(var.private_subnets) : 0

  vpc_id = local.vpc_id

  tags = merge({ Name = format("%s-private-%s", var.name, element(var.azs, count.index)) }, var.tags)
}

resource "aws_eip" "nat" {
  count = local.nat_count

  domain = "vpc"

  tags = merge({ Name = format("%s-nat-%s", var.name, element(var.azs, count.index)) }, var.tags)
}

resource "aws_nat_gateway" "this" {
  count = local.nat_count

  allocation_id = element(aws_eip.nat[*].id, count.index)
  subnet_id     = element(aws_subnet.public[*].id, count.index)

  tags = merge({ Name = format("%s-%s", var.name, element(var.azs, count.index)) }, var.tags)
}

resource "aws_route" "private_nat_gateway" {
  count = local.nat_count

  route_table_id         = element(aws_route_table.private[*].id, count.index)
  destination_cidr_block = "0.0.0.0/0"
  nat_gateway_id         = element(aws_nat_gateway.this[*].id, count.index)
}

resource "aws_network_acl" "public" {
  count = var.create_vpc && length(var.public_subnets) > 0 ? 1 : 0

  vpc_id     = local.vpc_id
  subnet_ids = aws_subnet.public[*].id

  tags = merge({ Name = "${var.name}-public" }, var.tags)
}

resource "aws_network_acl_rule" "public_inbound" {
  count = var.create_vpc && length(var.public_subnets) > 0 ? length(var.public_inbound_acl_rules) : 0

  network_acl_id = aws_network_acl.public[0].id
  egress         = false
  rule_number    = var.public_inbound_acl_rules[count.index]["rule_number"]
  rule_action    = var.public_inbound_acl_rules[count.index]["rule_action"]
  from_port      = var.public_inbound_acl_rules[count.index]["from_port"]
  to_port        = var.public_inbound_acl_rules[count.index]["to_port"]
  protocol       = var.public_inbound_acl_rules[count.index]["protocol"]
  cidr_block     = var.public_inbound_acl_rules[count.index]["cidr_block"]
}
