resource "aws_db_parameter_group" "postgres" {
  name   = "platform-pg16"
  family = "postgres16"

  dynamic "parameter" {
    for_each = var.db_parameters

    content {
      name  = parameter.key
      value = parameter.value
    }
  }
}
