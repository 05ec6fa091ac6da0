resource "aws_instance" "this" {
  count = var.create ? 1 : 0

  ami                     = var.ami
  instance_type           = var.instance_type
  subnet_id               = var.subnet_id
  vpc_security_group_ids  = var.vpc_security_group_ids
  monitoring              = var.monitoring
  disable_api_termination = var.disable_api_termination

  metadata_options {
    http_endpoint               = "enabled"
    http_tokens                 = var.metadata_http_tokens
    http_put_response_hop_limit = 1
  }

  root_block_device {
    volume_type = "gp3"
    volume_size = var.root_volume_size
    encrypted   = true
  }

  tags = merge({ "Name" = var.name }, var.instance_tags, var.tags)
}
