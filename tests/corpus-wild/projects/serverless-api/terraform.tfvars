project     = "parcels"
environment = "prod"

artifacts_bucket = "parcels-artifacts-123456789012"
release          = "2025.05.2"
tracing_mode     = "Active"

functions = {
  get-parcel = {
    description = "Returns a parcel and its latest scans"
    handler     = "parcels.api.get_handler"
  }
  create-parcel = {
    description          = "Registers a parcel from a shipper's label request"
    handler              = "parcels.api.create_handler"
    memory_size          = 512
    timeout              = 15
    reserved_concurrency = 50
    environment = {
      LABEL_BUCKET = "parcels-prod-labels-123456789012"
    }
  }
  scan-ingest = {
    description          = "Applies depot scan events to parcels"
    handler              = "parcels.scans.handler"
    memory_size          = 1024
    timeout              = 60
    reserved_concurrency = 20
    log_retention_days   = 90
    environment = {
      LOG_LEVEL        = "WARNING"
      BATCH_WRITE_SIZE = "25"
    }
    tags = {
      CostCenter = "depot-ops"
    }
  }
  notify = {
    description = "Sends delivery notifications to recipients"
    handler     = "parcels.notify.handler"
    timeout     = 30
    environment = {
      SENDER_ADDRESS = "no-reply@parcels.example.com"
      SMS_PROVIDER   = "pinpoint"
    }
  }
}

routes = {
  "GET /parcels/{id}"        = { function = "get-parcel" }
  "GET /parcels/{id}/events" = { function = "get-parcel" }
  "POST /parcels" = {
    function           = "create-parcel"
    authorization_type = "AWS_IAM"
  }
}

cors_allow_origins = ["https://track.parcels.example.com"]

api_throttling = {
  burst_limit = 200
  rate_limit  = 100
}

tables = {
  parcels = {
    hash_key = "parcel_id"
    attributes = {
      parcel_id  = "S"
      shipper_id = "S"
      created_at = "S"
    }
    deletion_protection = true
    global_secondary_indexes = {
      by-shipper = { hash_key = "shipper_id", range_key = "created_at" }
    }
  }
  scan-events = {
    hash_key      = "parcel_id"
    range_key     = "scanned_at"
    attributes    = { parcel_id = "S", scanned_at = "S" }
    ttl_attribute = "expires_at"
  }
  idempotency = {
    hash_key               = "id"
    attributes             = { id = "S" }
    ttl_attribute          = "expiration"
    point_in_time_recovery = false
    tags = {
      DataClass = "transient"
    }
  }
}

queues = {
  scans = {
    consumer           = "scan-ingest"
    visibility_timeout = 360
    batch_size         = 25
    batching_window    = 5
  }
  notifications = {
    consumer           = "notify"
    visibility_timeout = 180
    max_receive_count  = 3
  }
  exports = {
    retention_seconds = 1209600
    tags = {
      Team = "data-platform"
    }
  }
}
