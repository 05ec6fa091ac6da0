output "worker_ids" {
  description = "Instance ids of the batch workers, in list order."
  value       = aws_instance.worker[*].id
}

output "app_instance_ids" {
  description = "Instance ids of the application servers, by application."
  value       = { for name, instance in aws_instance.app : name => instance.id }
}

output "queue_urls" {
  description = "Job queue URLs, by short name."
  value       = { for name, queue in aws_sqs_queue.jobs : name => queue.url }
}

output "data_bucket_names" {
  description = "Data lake bucket names, by zone."
  value       = { for zone, bucket in aws_s3_bucket.data : zone => bucket.bucket }
}

output "pool_names" {
  description = "Auto Scaling group names, by pool."
  value       = { for name, group in aws_autoscaling_group.pool : name => group.name }
}
