locals {
  name_prefix = lower(join("-", [var.project, var.environment]))

  default_tags = {
    Project     = var.project
    Environment = var.environment
    ManagedBy   = "terraform"
  }
}

resource "aws_security_group" "api" {
  name        = format("%s-api", local.name_prefix)
  description = "Payments API servers"
  vpc_id      = var.vpc_id

  ingress {
    description = "HTTPS from the internal network"
    from_port   = 443
    to_port     = 443
    protocol    = "tcp"
    cidr_blocks = ["10.0.0.0/8"]
  }

  egress {
    from_port   = 0
    to_port     = 0
    protocol    = "-1"
    cidr_blocks = ["0.0.0.0/0"]
  }

  tags = merge(local.default_tags, { Name = format("%s-api", local.name_prefix) })
}

module "api" {
  source = "./modules/ec2-instance"
  count  = length(var.api_instances)

  name                   = format("%s-api-%02d", local.name_prefix, count.index + 1)
  ami                    = var.ami_id
  instance_type          = try(var.api_instances[count.index].instance_type, var.default_instance_type)
  subnet_id              = element(var.subnet_ids, count.index)
  vpc_security_group_ids = [aws_security_group.api.id]
  monitoring             = try(var.api_instances[count.index].monitoring, false)

  tags = merge(local.default_tags, try(var.api_instances[count.index].tags, {}))
}

module "queue" {
  source = "./modules/sqs-queue"
  count  = length(var.queues)

  name                       = lower(format("%s-%s", local.name_prefix, var.queues[count.index].name))
  visibility_timeout_seconds = try(var.queues[count.index].visibility_timeout, 30)
  message_retention_seconds  = try(var.queues[count.index].retention, 345600)

  tags = merge(
    local.default_tags,
    { Queue = var.queues[count.index].name },
    try(var.queues[count.index].tags, {}),
  )
}
