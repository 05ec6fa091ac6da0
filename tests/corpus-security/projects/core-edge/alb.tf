module "alb" {
  source = "./modules/alb"

  name            = "${local.name}-web"
  vpc_id          = aws_vpc.this.id
  subnet_ids      = local.public_subnet_ids
  security_groups = [aws_security_group.alb.id]
  certificate_arn = var.certificate_arn
  tls_policy      = var.tls_policy
  idle_timeout    = var.alb_idle_timeout
  log_bucket      = var.alb_log_bucket

  tags = {
    Service = "web"
  }
}
