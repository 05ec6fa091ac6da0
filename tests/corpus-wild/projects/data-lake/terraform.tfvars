environment = "prod"

buckets = {
  raw = {
    versioning      = true
    noncurrent_days = 30
    tags = {
      DataClass = "confidential"
    }
  }

  curated = {
    versioning      = true
    kms_key_arn     = "arn:aws:kms:us-east-1:123456789012:key/6a1d2c3b-4e5f-4a7b-8c9d-0e1f2a3b4c5d"
    noncurrent_days = 90
    tags = {
      DataClass = "internal"
    }
  }

  exports = {
    versioning      = false
    expiration_days = 14
    tags = {
      DataClass = "internal"
      Consumer  = "partners"
    }
  }

  scratch = {
    versioning      = false
    expiration_days = 7
  }
}
