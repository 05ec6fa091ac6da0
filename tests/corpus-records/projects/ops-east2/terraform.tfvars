queues = {
  MyQueue = {
    visibility_timeout = 30
    retention_seconds  = 345600
  }
  jobs-dlq = {
    visibility_timeout = 60
    retention_seconds  = 1209600
  }
}
