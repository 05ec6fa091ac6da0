output "vpc_id" {
  value = try(aws_vpc.this[0].id, null)
}

output "private_subnets" {
  value = aws_subnet.private[*].id
}

output "public_subnets" {
  value = aws_subnet.public[*].id
}
