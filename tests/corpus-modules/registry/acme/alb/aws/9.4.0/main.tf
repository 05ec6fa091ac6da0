resource "aws_lb" "this" {
  count = var.create ? 1 : 0

  name               = var.name
  load_balancer_type = var.load_balancer_type
  internal           = var.internal
  security_groups    = var.security_groups
  subnets            = var.subnets

  idle_timeout               = var.idle_timeout
  enable_deletion_protection = var.enable_deletion_protection
  drop_invalid_header_fields = var.drop_invalid_header_fields
  enable_http2               = var.enable_http2
  desync_mitigation_mode     = "defensive"

  dynamic "access_logs" {
    for_each = length(var.access_logs) > 0 ? [var.access_logs] : []

    content {
      bucket  = access_logs.value.bucket
      enabled = try(access_logs.value.enabled, true)
      prefix  = try(access_logs.value.prefix, null)
    }
  }

  tags = var.tags
}

resource "aws_lb_target_group" "this" {
  for_each = { for k, v in var.target_groups : k => v if var.create }

  name        = try(each.value.name, each.key)
  port        = try(each.value.port, null)
  protocol    = try(each.value.protocol, null)
  target_type = try(each.value.target_type, null)
  vpc_id      = var.vpc_id

  deregistration_delay = try(each.value.deregistration_delay, null)

  dynamic "health_check" {
    for_each = try([each.value.health_check], [])

    content {
      enabled             = try(health_check.value.enabled, null)
      path                = try(health_check.value.path, null)
      matcher             = try(health_check.value.matcher, null)
      interval            = try(health_check.value.interval, null)
      healthy_threshold   = try(health_check.value.healthy_threshold, null)
      unhealthy_threshold = try(health_check.value.unhealthy_threshold, null)
    }
  }

  tags = merge(var.tags, try(each.value.tags, {}))
}
