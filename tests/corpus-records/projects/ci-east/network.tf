resource "aws_security_group" "ecs_tasks" {
  name        = "prod-webapp-ecs-tasks"
  description = "prod-webapp ECS tasks"
  vpc_id      = var.vpc_id
}

resource "aws_security_group_rule" "ecs_tasks_egress" {
  type              = "egress"
  security_group_id = aws_security_group.ecs_tasks.id
  protocol          = "-1"
  from_port         = 0
  to_port           = 0
  cidr_blocks       = ["0.0.0.0/0"]
  description       = "Allow egress to the internet. Required for now until we land ECS/ECR endpoints in the VPC"
}

resource "aws_security_group" "webserver" {
  name        = "prod-webapp-webserver-security"
  description = "prod-webapp-webserver Security SG"
  vpc_id      = var.vpc_id
}
