name_prefix = "fulfil-prod"

data_subnet_ids = ["subnet-04c1e2a3b4d5e6f70", "subnet-05d2f3b4c5e6f7a81", "subnet-06e3a4c5d6f7a8b92"]

security_group_ids = {
  cache     = "sg-07a1b2c3d4e5f6a01"
  search    = "sg-07a1b2c3d4e5f6a02"
  warehouse = "sg-07a1b2c3d4e5f6a03"
  kafka     = "sg-07a1b2c3d4e5f6a04"
  docdb     = "sg-07a1b2c3d4e5f6a05"
  efs       = "sg-07a1b2c3d4e5f6a06"
  neptune   = "sg-07a1b2c3d4e5f6a07"
}

search_master_role_arn = "arn:aws:iam::123456789012:role/fulfil-prod-search-admin"
search_reader_role_arn = "arn:aws:iam::123456789012:role/fulfil-prod-catalogue-task"

queues = {
  orders = {
    visibility_timeout_seconds = 60
  }
  payment-events = {
    visibility_timeout_seconds = 120
    message_retention_seconds  = 1209600
  }
  shipment-updates = {}
}

alert_email = "fulfilment-oncall@northwindgoods.com"
