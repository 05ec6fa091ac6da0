region          = "us-west-2"
account_id      = "123456789012"
vpc_id          = "vpc-07c2e9a4b1d6f3850"
subnet_ids      = ["subnet-0c41a7e2d9b3f6018", "subnet-0d52b8f3e0c4a7129"]
certificate_arn = "arn:aws:acm:us-west-2:123456789012:certificate/5e1c9a7b-3d2f-4b86-a0e4-9c7d2b1f6a38"

buckets = {
  receipts = {
    purpose     = "card receipts kept for disputes"
    expire_days = 2555
    transitions = { GLACIER_IR = 90 }
  }
  artifacts = {
    purpose         = "build artifacts"
    versioning      = false
    access_logs     = false
    noncurrent_days = 30
  }
}

queues = {
  settlements = {
    visibility_timeout = 120
  }
  refunds = {
    retention_seconds = 1209600
  }
}

environments = {
  staging = {
    deletion_protection = false
    backup_days         = 1
    instance_class      = "db.t4g.medium"
    tls_policy          = "ELBSecurityPolicy-TLS-1-2-2017-01"
    ingress = {
      https = { port = 443, cidrs = ["10.0.0.0/8"], description = "HTTPS from the corporate network" }
    }
  }
  prod = {
    ingress = {
      https = { port = 443, cidrs = ["0.0.0.0/0"], description = "HTTPS from the internet" }
      http  = { port = 80, cidrs = ["0.0.0.0/0"], description = "HTTP, redirected to HTTPS" }
    }
  }
}
