queues = {
  orders = {
    visibility_timeout_seconds = 60
  }
  payments = {
    visibility_timeout_seconds = 120
    message_retention_seconds  = 1209600
  }
  returns = {}
}
