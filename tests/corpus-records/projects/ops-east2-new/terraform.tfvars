queues = {
  jobs-dlq = {
    visibility_timeout = 60
    retention_seconds  = 1209600
  }
}
