resource "aws_launch_template" "pool" {
  name                   = "${local.name_prefix}-pool"
  image_id               = var.ami_id
  instance_type          = "c6i.large"
  vpc_security_group_ids = [aws_security_group.apps.id]

  metadata_options {
    http_endpoint = "enabled"
    http_tokens   = "required"
  }

  tag_specifications {
    resource_type = "instance"
    tags          = merge(local.common_tags, { Role = "pool" })
  }

  tags = local.common_tags
}

resource "aws_autoscaling_group" "pool" {
  for_each = local.pools

  name                = "${local.name_prefix}-${each.key}"
  min_size            = each.value.min_size
  max_size            = each.value.max_size
  desired_capacity    = each.value.desired_capacity
  vpc_zone_identifier = var.subnet_ids
  health_check_type   = "EC2"

  launch_template {
    id      = aws_launch_template.pool.id
    version = "$Latest"
  }

  tag {
    key                 = "Name"
    value               = "${local.name_prefix}-${each.key}"
    propagate_at_launch = true
  }

  tag {
    key                 = "Pool"
    value               = each.key
    propagate_at_launch = true
  }
}
