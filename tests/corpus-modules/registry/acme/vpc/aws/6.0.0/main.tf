locals {
  create_vpc = var.create_vpc
  len_private_subnets = length(var.private_subnets)
  len_public_subnets  = length(var.public_subnets)
}

resource "aws_vpc" "this" {
  count = local.create_vpc ? 1 : 0

  cidr_block           = var.ipv4_cidr
  instance_tenancy     = var.instance_tenancy
  enable_dns_hostnames = var.enable_dns_hostnames
  enable_dns_support   = var.enable_dns_support

  tags = merge(
    { "Name" = var.name },
    var.tags,
    var.vpc_tags,
  )
}

resource "aws_subnet" "private" {
  count = local.create_vpc && local.len_private_subnets > 0 ? local.len_private_subnets : 0

  vpc_id            = aws_vpc.this[0].id
  cidr_block        = element(concat(var.private_subnets, [""]), count.index)
  availability_zone = element(var.azs, count.index)

  tags = merge(
    { Name = format("${var.name}-${var.private_subnet_suffix}-%s", element(var.azs, count.index)) },
    var.tags,
    var.private_subnet_tags,
  )
}

resource "aws_subnet" "public" {
  count = local.create_vpc && local.len_public_subnets > 0 ? local.len_public_subnets : 0

  vpc_id                  = aws_vpc.this[0].id
  cidr_block              = element(concat(var.public_subnets, [""]), count.index)
  availability_zone       = element(var.azs, count.index)
  map_public_ip_on_launch = var.map_public_ip_on_launch

  tags = merge(
    { Name = format("${var.name}-${var.public_subnet_suffix}-%s", element(var.azs, count.index)) },
    var.tags,
    var.public_subnet_tags,
  )
}
