output "vpc_id" {
  value = aws_vpc.this.id
}

output "private_subnet_ids" {
  value = local.private_subnet_ids
}

output "db_security_group_id" {
  value = aws_security_group.db.id
}

output "alb_dns_name" {
  value = module.alb.dns_name
}
