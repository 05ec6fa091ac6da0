resource "aws_instance" "build" {
  ami           = "ami-0c55b159cbfafe1f0"
  instance_type = "t3.small"

  tags = {
    Name = "build"
  }
}

resource "aws_ecs_service" "orders" {
  name            = "orders-prod"
  cluster         = "orders-prod"
  task_definition = "orders-prod:12"
  desired_count   = 3
  launch_type     = "FARGATE"

  network_configuration {
    subnets         = ["subnet-0a1b2c3d4e5f60718"]
    security_groups = ["sg-0123456789abcdef0"]
  }
}

# The service scales between 3 and 12 tasks on CPU.
resource "aws_appautoscaling_target" "orders" {
  service_namespace  = "ecs"
  resource_id        = "service/orders-prod/orders-prod"
  scalable_dimension = "ecs:service:DesiredCount"
  min_capacity       = 3
  max_capacity       = 12
}
