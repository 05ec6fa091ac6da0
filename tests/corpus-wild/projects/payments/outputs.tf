output "api_instance_ids" {
  description = "IDs of the API servers"
  value       = module.api[*].id
}

output "api_private_ips" {
  description = "Private IPs of the API servers"
  value       = module.api[*].private_ip
}

output "queue_urls" {
  description = "Queue URL per queue name"
  value       = { for i, q in var.queues : q.name => module.queue[i].queue_url }
}
