module "table" {
  source   = "./modules/table"
  for_each = var.tables

  name           = each.key
  hash_key       = each.value.hash_key
  range_key      = each.value.range_key
  read_capacity  = each.value.read_capacity
  write_capacity = each.value.write_capacity
  attributes     = each.value.attributes
}
