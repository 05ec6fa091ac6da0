environment = "prod"
app         = "ledger"

data_kms_key_arn        = "arn:aws:kms:us-east-1:123456789012:key/6f1d2c3b-8a4e-4b7f-9c20-3e5d7a9b1c84"
partner_reader_role_arn = "arn:aws:iam::210987654321:role/ledger-export-reader"
rds_monitoring_role_arn = "arn:aws:iam::123456789012:role/rds-enhanced-monitoring"

db_subnet_ids         = ["subnet-0c41a7e2b9d305f16", "subnet-0d52b8f3ca0e416a7"]
db_security_group_ids = ["sg-0e7a2c4b6d8f01359"]

buckets = {
  documents = {
    data_class = "confidential"
    versioning = "Enabled"
  }
  exports = {
    data_class = "confidential"
    versioning = "Enabled"
  }
  archive = {
    data_class = "restricted"
    versioning = "Enabled"
    mfa_delete = "Enabled"
  }
  scratch = {
    data_class    = "internal"
    versioning    = "Suspended"
    sse_algorithm = "AES256"
  }
}

reporting_deletion_protection = false

tables = {
  entries = {
    hash_key   = "account_id"
    range_key  = "entry_id"
    attributes = { account_id = "S", entry_id = "S" }
  }
  accounts = {
    hash_key   = "account_id"
    attributes = { account_id = "S" }
  }
  sessions = {
    hash_key               = "session_id"
    attributes             = { session_id = "S" }
    deletion_protection    = false
    point_in_time_recovery = false
    ttl_attribute          = "expires_at"
  }
}
