output "instance_id" {
  description = "Id of the web server instance."
  value       = aws_instance.this.id
}

output "private_ip" {
  description = "Private IP address of the web server."
  value       = aws_instance.this.private_ip
}

output "security_group_id" {
  description = "Id of the web tier security group."
  value       = aws_security_group.this.id
}
