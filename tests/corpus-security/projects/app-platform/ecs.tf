resource "aws_ecs_cluster" "main" {
  name = local.name

  setting {
    name  = "containerInsights"
    value = "enabled"
  }

  tags = local.common_tags
}

resource "aws_cloudwatch_log_group" "api" {
  name              = "/ecs/${local.name}-api"
  retention_in_days = 90
  kms_key_id        = aws_kms_key.platform.arn

  tags = local.common_tags
}

resource "aws_ecs_task_definition" "api" {
  family                   = "${local.name}-api"
  requires_compatibilities = ["FARGATE"]
  network_mode             = "awsvpc"
  cpu                      = var.api_cpu
  memory                   = var.api_memory
  execution_role_arn       = aws_iam_role.ecs_execution.arn
  task_role_arn            = aws_iam_role.api_task.arn

  container_definitions = jsonencode([{
    name                   = "api"
    image                  = var.api_image
    essential              = true
    user                   = "10001"
    privileged             = false
    readonlyRootFilesystem = true
    portMappings = [{
      containerPort = 8080
      hostPort      = 8080
      protocol      = "tcp"
    }]
    environment = [
      { name = "APP_ENV", value = var.environment },
      { name = "PORT", value = "8080" },
    ]
    logConfiguration = {
      logDriver = "awslogs"
      options = {
        awslogs-group         = aws_cloudwatch_log_group.api.name
        awslogs-region        = var.region
        awslogs-stream-prefix = "api"
      }
    }
  }])

  runtime_platform {
    operating_system_family = "LINUX"
    cpu_architecture        = "ARM64"
  }

  tags = local.common_tags
}

resource "aws_ecs_service" "api" {
  name                               = "${local.name}-api"
  cluster                            = aws_ecs_cluster.main.id
  task_definition                    = aws_ecs_task_definition.api.arn
  desired_count                      = var.api_desired_count
  launch_type                        = "FARGATE"
  platform_version                   = "1.4.0"
  enable_execute_command             = false
  health_check_grace_period_seconds  = 30
  deployment_minimum_healthy_percent = 100
  deployment_maximum_percent         = 200

  deployment_circuit_breaker {
    enable   = true
    rollback = true
  }

  network_configuration {
    subnets          = var.private_subnet_ids
    security_groups  = [var.api_security_group_id]
    assign_public_ip = false
  }

  load_balancer {
    target_group_arn = var.api_target_group_arn
    container_name   = "api"
    container_port   = 8080
  }

  tags = local.common_tags
}

# Host metrics for the EC2 capacity of the batch cluster, run as a daemon by the
# batch stack; the task definition lives here with the other images.
resource "aws_cloudwatch_log_group" "node_exporter" {
  name              = "/ecs/${local.name}-node-exporter"
  retention_in_days = 30
  kms_key_id        = aws_kms_key.platform.arn

  tags = local.common_tags
}

resource "aws_ecs_task_definition" "node_exporter" {
  family                   = "${local.name}-node-exporter"
  requires_compatibilities = ["EC2"]
  network_mode             = "bridge"
  execution_role_arn       = aws_iam_role.ecs_execution.arn

  container_definitions = jsonencode([{
    name       = "node-exporter"
    image      = "quay.io/prometheus/node-exporter:v1.8.2"
    essential  = true
    memory     = 128
    user       = "65534"
    privileged = false
    portMappings = [{
      containerPort = 9100
      hostPort      = 9100
      protocol      = "tcp"
    }]
    logConfiguration = {
      logDriver = "awslogs"
      options = {
        awslogs-group         = aws_cloudwatch_log_group.node_exporter.name
        awslogs-region        = var.region
        awslogs-stream-prefix = "node-exporter"
      }
    }
  }])

  tags = local.common_tags
}
