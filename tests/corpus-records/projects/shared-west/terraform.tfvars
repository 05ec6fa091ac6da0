tables = {
  Music = {
    hash_key       = "Artist"
    range_key      = "SongTitle"
    read_capacity  = 10
    write_capacity = 10
    attributes     = { Artist = "S", SongTitle = "S" }
  }
  Books = {
    hash_key       = "Isbn"
    read_capacity  = 5
    write_capacity = 5
    attributes     = { Isbn = "S" }
  }
}

trail_name   = "sample-cloudtrail-name"
trail_bucket = "sample-cloudtrail-bucket-name"
