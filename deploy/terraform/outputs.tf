output "queue_url" {
  description = "[feed] queue_url of the daemon."
  value       = aws_sqs_queue.events.url
}

output "queue_arn" {
  description = "ARN of the queue CloudTrail's events arrive on."
  value       = aws_sqs_queue.events.arn
}

output "dead_letter_queue_url" {
  description = "Where messages the daemon could not take end up (docs/operations.md, \"Poison messages\")."
  value       = aws_sqs_queue.dead_letter.url
}

output "rule_arn" {
  description = "The EventBridge rule that feeds the queue."
  value       = aws_cloudwatch_event_rule.cloudtrail.arn
}

output "role_arn" {
  description = "The daemon's role: the eks.amazonaws.com/role-arn annotation of its Kubernetes service account (IRSA), or the ECS task role."
  value       = aws_iam_role.daemon.arn
}

output "region" {
  description = "[feed] region of the daemon."
  value       = split(":", aws_sqs_queue.events.arn)[3]
}

output "ecs_service_name" {
  description = "The Fargate service, when create_ecs_service."
  value       = try(aws_ecs_service.daemon[0].name, null)
}

output "carries" {
  description = "[feed] carries of the daemon: \"both\" when the trail bucket's notifications share the queue with the rule's events."
  value       = var.trail_bucket_name == null ? "eventbridge" : "both"
}

output "trail_buckets" {
  description = "[feed] trail_buckets of the daemon."
  value       = var.trail_bucket_name == null ? [] : [var.trail_bucket_name]
}

output "undelivered_queue_url" {
  description = "Events EventBridge could not deliver to the queue after its retries."
  value       = aws_sqs_queue.undelivered.url
}

output "bus_policy_json" {
  description = "The event bus policy the forwarding accounts need (merged with bus_policy_documents); apply it yourself when manage_bus_policy is false."
  value       = try(data.aws_iam_policy_document.bus[0].json, null)
}
