resource "aws_instance" "builder" {
  ami                    = "ami-0c7217cdde317cfec"
  instance_type          = var.builder_instance_type
  subnet_id              = var.builder_subnet_id
  vpc_security_group_ids = var.builder_security_group_ids
  monitoring             = true

  root_block_device {
    volume_size = 50
    volume_type = "gp3"
    encrypted   = true
  }

  metadata_options {
    http_tokens = "required"
  }

  tags = {
    Name = "build-runner"
    Role = "ci-builder"
  }
}

resource "aws_ebs_volume" "cache" {
  availability_zone = "us-east-1a"
  size              = 200
  type              = "gp3"
  encrypted         = true

  tags = {
    Name = "build-cache"
    Team = "platform"
  }
}

resource "aws_volume_attachment" "cache" {
  device_name = "/dev/sdf"
  volume_id   = aws_ebs_volume.cache.id
  instance_id = aws_instance.builder.id
}
