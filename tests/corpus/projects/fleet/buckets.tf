resource "aws_s3_bucket" "data" {
  for_each = var.data_buckets

  bucket = "acme-${local.name_prefix}-${each.key}"

  tags = merge(local.common_tags, {
    Zone      = each.key
    DataClass = each.value.data_class
  })
}

resource "aws_s3_bucket_versioning" "data" {
  for_each = var.data_buckets

  bucket = aws_s3_bucket.data[each.key].id

  versioning_configuration {
    status = each.value.versioning ? "Enabled" : "Suspended"
  }
}
