resource "aws_ebs_encryption_by_default" "this" {
  enabled = true
}

resource "aws_instance" "app" {
  for_each = local.app_instances

  ami                    = var.app_ami
  instance_type          = each.value.instance_type
  subnet_id              = aws_subnet.this[each.value.subnet].id
  vpc_security_group_ids = [aws_security_group.app.id]
  iam_instance_profile   = var.app_instance_profile
  monitoring             = true

  metadata_options {
    http_endpoint               = "enabled"
    http_tokens                 = "required"
    http_put_response_hop_limit = 1
  }

  root_block_device {
    volume_type = "gp3"
    volume_size = 30
    encrypted   = true
    kms_key_id  = var.ebs_kms_key_arn
  }

  tags = {
    Name = "${local.name}-${each.key}"
    Role = "app"
  }
}

resource "aws_instance" "windows_jump" {
  ami                    = var.windows_ami
  instance_type          = "t3.medium"
  subnet_id              = aws_subnet.this["public-a"].id
  vpc_security_group_ids = [aws_security_group.windows_jump.id]

  metadata_options {
    http_endpoint = "enabled"
    http_tokens   = "required"
  }

  root_block_device {
    volume_type = "gp3"
    volume_size = 60
    encrypted   = true
    kms_key_id  = var.ebs_kms_key_arn
  }

  tags = {
    Name = "${local.name}-windows-jump"
    Role = "jump"
  }
}

resource "aws_ebs_volume" "app_data" {
  availability_zone = "us-east-1a"
  size              = 200
  type              = "gp3"
  encrypted         = true
  kms_key_id        = var.ebs_kms_key_arn

  tags = {
    Name = "${local.name}-app-a-data"
  }
}

resource "aws_volume_attachment" "app_data" {
  device_name = "/dev/sdf"
  volume_id   = aws_ebs_volume.app_data.id
  instance_id = aws_instance.app["app-a"].id
}
