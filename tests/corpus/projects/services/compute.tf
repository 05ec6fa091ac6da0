# Worker fleet that drains the notifications queue.

resource "aws_launch_template" "worker" {
  name                   = "services-worker"
  image_id               = var.worker_ami_id
  instance_type          = var.worker_instance_type
  vpc_security_group_ids = [var.worker_security_group_id]

  iam_instance_profile {
    name = aws_iam_instance_profile.worker.name
  }

  metadata_options {
    http_endpoint = "enabled"
    http_tokens   = "required"
  }

  monitoring {
    enabled = true
  }

  tag_specifications {
    resource_type = "instance"
    tags          = merge(local.common_tags, { Name = "services-worker" })
  }

  tags = local.common_tags
}

resource "aws_autoscaling_group" "worker" {
  name                      = "services-worker-asg"
  min_size                  = 2
  max_size                  = 6
  desired_capacity          = 2
  vpc_zone_identifier       = var.private_subnet_ids
  health_check_type         = "EC2"
  health_check_grace_period = 300

  launch_template {
    id      = aws_launch_template.worker.id
    version = "$Latest"
  }

  tag {
    key                 = "Name"
    value               = "services-worker"
    propagate_at_launch = true
  }

  tag {
    key                 = "Project"
    value               = "services"
    propagate_at_launch = true
  }
}

resource "aws_autoscaling_policy" "worker_scale_out" {
  name                   = "services-worker-scale-out"
  autoscaling_group_name = aws_autoscaling_group.worker.name
  policy_type            = "SimpleScaling"
  adjustment_type        = "ChangeInCapacity"
  scaling_adjustment     = 1
  cooldown               = 300
}
