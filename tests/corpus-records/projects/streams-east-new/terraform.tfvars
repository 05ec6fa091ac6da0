streams = {
  clicks = { shards = 4, retention_hours = 48 }
}
