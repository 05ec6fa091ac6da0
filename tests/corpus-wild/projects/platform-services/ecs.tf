resource "aws_ecs_cluster" "this" {
  name = "platform"
}

resource "aws_ecs_service" "api" {
  name            = "api"
  cluster         = aws_ecs_cluster.this.id
  task_definition = "arn:aws:ecs:us-east-1:123456789012:task-definition/platform-api:12"
  desired_count   = 3
  launch_type     = "FARGATE"

  lifecycle {
    ignore_changes = [desired_count]
  }
}

resource "aws_ecs_service" "worker" {
  name                              = "worker"
  cluster                           = aws_ecs_cluster.this.id
  task_definition                   = "arn:aws:ecs:us-east-1:123456789012:task-definition/platform-worker:4"
  desired_count                     = var.worker_count
  launch_type                       = "FARGATE"
  health_check_grace_period_seconds = 0
}
