output "arn" {
  value = try(aws_lb.this[0].arn, null)
}

output "target_groups" {
  value = aws_lb_target_group.this
}
