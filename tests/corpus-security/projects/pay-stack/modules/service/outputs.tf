output "load_balancer_dns" {
  value = aws_lb.this.dns_name
}

output "cluster_endpoint" {
  value = aws_rds_cluster.this.endpoint
}
