output "api_endpoint" {
  description = "Invoke URL of the $default stage"
  value       = aws_apigatewayv2_api.this.api_endpoint
}

output "queue_urls" {
  description = "Queue URLs by short name"
  value       = { for name, queue in aws_sqs_queue.this : name => queue.url }
}
