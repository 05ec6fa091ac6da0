streams = {
  GoodStream = { shards = 1 }
  clicks     = { shards = 4, retention_hours = 48 }
}
