resource "aws_security_group" "api" {
  name        = "${local.name_prefix}-api"
  description = "Orders API"
  vpc_id      = var.vpc_id

  ingress {
    description = "HTTPS from internal networks"
    from_port   = 443
    to_port     = 443
    protocol    = "tcp"
    cidr_blocks = var.api_allowed_cidrs
  }

  egress {
    description = "All outbound"
    from_port   = 0
    to_port     = 0
    protocol    = "-1"
    cidr_blocks = ["0.0.0.0/0"]
  }

  tags = merge(local.tags, {
    Name = "${local.name_prefix}-api"
  })
}

resource "aws_instance" "api" {
  ami                     = var.api_ami
  instance_type           = var.api_instance_type
  subnet_id               = var.private_subnet_ids[0]
  vpc_security_group_ids  = [aws_security_group.api.id]
  disable_api_termination = var.api_disable_termination

  tags = merge(local.tags, {
    Name = "${local.name_prefix}-api"
    Role = "api"
  })
}

resource "aws_instance" "bastion" {
  ami                    = var.api_ami
  instance_type          = local.bastion_instance_type
  subnet_id              = var.private_subnet_ids[1]
  vpc_security_group_ids = [aws_security_group.api.id]

  tags = merge(local.tags, {
    Name = "${local.name_prefix}-bastion"
    Role = "bastion"
  })
}

resource "aws_launch_template" "workers" {
  name                   = "${local.name_prefix}-workers"
  image_id               = var.api_ami
  instance_type          = "c6i.large"
  vpc_security_group_ids = [aws_security_group.api.id]

  tag_specifications {
    resource_type = "instance"
    tags          = merge(local.tags, { Role = "worker" })
  }
}

resource "aws_autoscaling_group" "workers" {
  name                = "${local.name_prefix}-workers"
  min_size            = var.worker_asg.min_size
  max_size            = var.worker_asg.max_size
  desired_capacity    = var.worker_asg.desired_capacity
  vpc_zone_identifier = var.private_subnet_ids

  launch_template {
    id      = aws_launch_template.workers.id
    version = "$Latest"
  }

  tag {
    key                 = "Name"
    value               = "${local.name_prefix}-worker"
    propagate_at_launch = true
  }
}
