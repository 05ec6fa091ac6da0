# The VPC belongs to the network team; this stack keeps its default security group empty.
resource "aws_default_security_group" "default" {
  vpc_id = var.vpc_id
}

resource "aws_ec2_serial_console_access" "this" {
  enabled = false
}
