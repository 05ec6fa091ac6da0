output "bucket_arns" {
  value = { for k, b in aws_s3_bucket.this : k => b.arn }
}

output "ledger_endpoint" {
  value = aws_db_instance.ledger.endpoint
}

output "payments_endpoint" {
  value = aws_rds_cluster.payments.endpoint
}

output "table_arns" {
  value = { for k, t in module.table : k => t.arn }
}
