output "orders_queue_url" {
  description = "URL of the orders queue."
  value       = aws_sqs_queue.orders.id
}

output "order_events_topic_arn" {
  description = "ARN of the order-events topic."
  value       = aws_sns_topic.order_events.arn
}

output "orders_table_name" {
  description = "Name of the orders table."
  value       = aws_dynamodb_table.orders.name
}

output "order_processor_arn" {
  description = "ARN of the order-processor function."
  value       = aws_lambda_function.order_processor.arn
}

output "db_endpoint" {
  description = "Connection endpoint of the services database."
  value       = aws_db_instance.main.endpoint
}

output "worker_asg_name" {
  description = "Name of the worker Auto Scaling group."
  value       = aws_autoscaling_group.worker.name
}
