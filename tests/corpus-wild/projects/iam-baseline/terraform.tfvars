org         = "acme"
environment = "prod"

tags = {
  Owner      = "cloud-security"
  CostCenter = "SEC-0042"
  Compliance = "cis-aws-1.4"
}

password_policy = {
  minimum_length   = 14
  max_age          = 90
  reuse_prevention = 24
}

console_users = [
  "alice.ng",
  "bruno.silva",
  "carmen.ortiz",
]

security_tooling_account_id = "210987654321"

log_bucket_lifecycle = {
  transition_days = 90
  expiration_days = 2555
  noncurrent_days = 30
}

guardduty_finding_frequency = "SIX_HOURS"

guardduty_features = {
  S3_DATA_EVENTS         = "ENABLED"
  EBS_MALWARE_PROTECTION = "ENABLED"
  RDS_LOGIN_EVENTS       = "ENABLED"
  EKS_AUDIT_LOGS         = "DISABLED"
  LAMBDA_NETWORK_LOGS    = "DISABLED"
}
