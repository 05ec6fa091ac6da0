buckets = {
  sensitive-data-bucket    = { kms = true }
  production-backup-bucket = {}
  corporate-documents      = {}
  critical-data-bucket     = { mfa_delete = "Enabled" }
  important-files-bucket   = { versioning = "Enabled" }
}
