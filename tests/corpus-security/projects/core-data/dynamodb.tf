module "table" {
  source   = "./modules/dynamodb-table"
  for_each = var.tables

  name                   = "${local.name}-${each.key}"
  hash_key               = each.value.hash_key
  range_key              = each.value.range_key
  attributes             = each.value.attributes
  deletion_protection    = each.value.deletion_protection
  point_in_time_recovery = each.value.point_in_time_recovery
  ttl_attribute          = each.value.ttl_attribute
  kms_key_arn            = var.data_kms_key_arn

  tags = {
    Table = each.key
  }
}
