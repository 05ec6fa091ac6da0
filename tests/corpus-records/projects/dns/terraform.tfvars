a_records = {
  www = ["192.0.2.10"]
}
