output "kms_key_arns" {
  value = { for k, key in aws_kms_key.this : k => key.arn }
}

output "trail_arn" {
  value = aws_cloudtrail.this.arn
}

output "security_alerts_topic_arn" {
  value = aws_sns_topic.security_alerts.arn
}
