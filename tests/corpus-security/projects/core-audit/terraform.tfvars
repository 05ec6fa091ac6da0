org                 = "acme"
environment         = "prod"
security_team_email = "security-alerts@acme.com"

trail_log_retention_days = 400

kms_keys = {
  cloudtrail = {
    description = "CloudTrail log files"
  }
  logs = {
    description = "CloudWatch Logs of the security baseline"
  }
  data = {
    description = "Ledger data: S3, RDS, DynamoDB and EBS"
  }
  backup = {
    description = "AWS Backup vault"
    rotation    = false
  }
}

config_bucket_name = "acme-org-config-snapshots"

guardduty_features = {
  S3_DATA_EVENTS         = "ENABLED"
  EBS_MALWARE_PROTECTION = "ENABLED"
  RDS_LOGIN_EVENTS       = "ENABLED"
  LAMBDA_NETWORK_LOGS    = "DISABLED"
}

password_policy = {
  minimum_password_length        = 14
  require_lowercase_characters   = true
  require_uppercase_characters   = true
  require_numbers                = true
  require_symbols                = true
  allow_users_to_change_password = true
  max_password_age               = 90
  password_reuse_prevention      = 24
}
