variable "name" {
  type = string
}

variable "hash_key" {
  type = string
}

variable "range_key" {
  type    = string
  default = null
}

variable "read_capacity" {
  type = number
}

variable "write_capacity" {
  type = number
}

variable "attributes" {
  type = map(string)
}

resource "aws_dynamodb_table" "this" {
  name           = var.name
  billing_mode   = "PROVISIONED"
  read_capacity  = var.read_capacity
  write_capacity = var.write_capacity
  hash_key       = var.hash_key
  range_key      = var.range_key

  dynamic "attribute" {
    for_each = var.attributes
    content {
      name = attribute.key
      type = attribute.value
    }
  }

  point_in_time_recovery {
    enabled = true
  }
}

output "arn" {
  value = aws_dynamodb_table.this.arn
}
