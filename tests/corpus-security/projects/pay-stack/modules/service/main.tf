locals {
  tags = { Environment = var.environment }
}

resource "aws_security_group" "alb" {
  name        = "${var.name}-alb"
  description = "Load balancer of ${var.name}"
  vpc_id      = var.vpc_id

  dynamic "ingress" {
    for_each = var.settings.ingress
    content {
      description = ingress.value.description
      from_port   = ingress.value.port
      to_port     = ingress.value.port
      protocol    = "tcp"
      cidr_blocks = ingress.value.cidrs
    }
  }

  egress {
    description = "To the service subnets"
    from_port   = 8080
    to_port     = 8080
    protocol    = "tcp"
    cidr_blocks = ["10.60.0.0/16"]
  }

  tags = local.tags
}

resource "aws_security_group" "db" {
  name        = "${var.name}-db"
  description = "Aurora cluster of ${var.name}"
  vpc_id      = var.vpc_id

  ingress {
    description = "PostgreSQL from the service subnets"
    from_port   = 5432
    to_port     = 5432
    protocol    = "tcp"
    cidr_blocks = ["10.60.0.0/16"]
  }

  tags = local.tags
}

resource "aws_rds_cluster" "this" {
  cluster_identifier                  = var.name
  engine                              = "aurora-postgresql"
  engine_version                      = "16.4"
  database_name                       = "payments"
  master_username                     = "pay_admin"
  manage_master_user_password         = true
  db_subnet_group_name                = "${var.name}-db"
  vpc_security_group_ids              = [aws_security_group.db.id]
  storage_encrypted                   = true
  kms_key_id                          = var.kms_key_arn
  iam_database_authentication_enabled = true
  deletion_protection                 = var.settings.deletion_protection
  backup_retention_period             = var.settings.backup_days
  preferred_backup_window             = "07:00-08:00"
  preferred_maintenance_window        = "sun:09:00-sun:10:00"
  copy_tags_to_snapshot               = true
  enabled_cloudwatch_logs_exports     = ["postgresql"]
  skip_final_snapshot                 = false
  final_snapshot_identifier           = "${var.name}-final"

  tags = local.tags
}

resource "aws_rds_cluster_instance" "this" {
  count = 1

  identifier                 = "${var.name}-${count.index + 1}"
  cluster_identifier         = aws_rds_cluster.this.id
  engine                     = aws_rds_cluster.this.engine
  engine_version             = aws_rds_cluster.this.engine_version
  instance_class             = var.settings.instance_class
  publicly_accessible        = false
  auto_minor_version_upgrade = true

  tags = local.tags
}

resource "aws_lb" "this" {
  name               = var.name
  load_balancer_type = "application"
  internal           = false
  subnets            = var.subnet_ids
  security_groups    = [aws_security_group.alb.id]

  enable_deletion_protection = true
  drop_invalid_header_fields = true
  desync_mitigation_mode     = "defensive"
  idle_timeout               = var.settings.idle_timeout

  access_logs {
    bucket  = var.log_bucket
    prefix  = var.environment
    enabled = true
  }

  tags = local.tags
}

resource "aws_lb_target_group" "this" {
  name        = var.name
  port        = 8080
  protocol    = "HTTP"
  vpc_id      = var.vpc_id
  target_type = "ip"

  health_check {
    path    = "/health"
    matcher = "200"
  }

  tags = local.tags
}

resource "aws_lb_listener" "http" {
  load_balancer_arn = aws_lb.this.arn
  port              = 80
  protocol          = "HTTP"

  default_action {
    type = "redirect"
    redirect {
      port        = "443"
      protocol    = "HTTPS"
      status_code = "HTTP_301"
    }
  }

  tags = local.tags
}

resource "aws_lb_listener" "https" {
  load_balancer_arn = aws_lb.this.arn
  port              = 443
  protocol          = "HTTPS"
  ssl_policy        = var.settings.tls_policy
  certificate_arn   = var.certificate_arn

  default_action {
    type             = "forward"
    target_group_arn = aws_lb_target_group.this.arn
  }

  tags = local.tags
}
