output "web_instance_id" {
  description = "Instance id of the storefront web server."
  value       = module.web.instance_id
}

output "web_security_group_id" {
  description = "Security group of the storefront web server."
  value       = module.web.security_group_id
}

output "orders_queue_url" {
  description = "URL of the orders queue."
  value       = module.orders_queue.queue_url
}

output "emails_queue_url" {
  description = "URL of the outgoing e-mail queue."
  value       = module.emails_queue.queue_url
}

output "assets_bucket_arn" {
  description = "ARN of the public assets bucket."
  value       = module.assets.bucket_arn
}

output "logs_bucket_name" {
  description = "Name of the access-log bucket."
  value       = module.logs.bucket_name
}
