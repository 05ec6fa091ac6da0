output "vpc_id" {
  value = try(aws_vpc.this[0].id, null)
}

output "public_subnets" {
  value = aws_subnet.public[*].id
}

output "private_subnets" {
  value = aws_subnet.private[*].id
}

output "natgw_ids" {
  value = aws_nat_gateway.this[*].id
}
