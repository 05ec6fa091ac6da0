output "vpc_id" {
  description = "Id of the core VPC."
  value       = aws_vpc.main.id
}

output "public_subnet_ids" {
  description = "Public subnets, one per availability zone."
  value       = [aws_subnet.public_a.id, aws_subnet.public_b.id]
}

output "private_subnet_ids" {
  description = "Private subnets, one per availability zone."
  value       = [aws_subnet.private_a.id, aws_subnet.private_b.id]
}

output "web_security_group_id" {
  description = "Security group of the public load balancer tier."
  value       = aws_security_group.web.id
}

output "app_security_group_id" {
  description = "Security group of the application tier."
  value       = aws_security_group.app.id
}

output "db_security_group_id" {
  description = "Security group of the database tier."
  value       = aws_security_group.db.id
}
