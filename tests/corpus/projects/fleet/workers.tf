# Batch workers: one instance per entry of var.worker_instance_types.
resource "aws_instance" "worker" {
  count = length(var.worker_instance_types)

  ami                    = var.ami_id
  instance_type          = var.worker_instance_types[count.index]
  subnet_id              = var.subnet_ids[count.index % length(var.subnet_ids)]
  vpc_security_group_ids = [aws_security_group.apps.id]

  root_block_device {
    volume_type = "gp3"
    volume_size = 40
  }

  metadata_options {
    http_endpoint = "enabled"
    http_tokens   = "required"
  }

  tags = merge(local.common_tags, {
    Name = "${local.name_prefix}-worker-${count.index + 1}"
    Role = "worker"
  })
}
