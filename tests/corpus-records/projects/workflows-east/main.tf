locals {
  # The integration tests' fixtures: one activity workers poll, one state machine they start.
  activity_name      = "testUser.2016-10-27-18-11-35.f017c391-9363-481a-be2e-"
  state_machine_name = "testUser.2016-10-27-18-16-38.ec6e261f-1323-4555-9fa"
}

resource "aws_iam_role" "execution" {
  name = "graphene-execution-role"
  path = "/graphene/tests/"

  assume_role_policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Effect    = "Allow"
      Principal = { Service = "states.amazonaws.com" }
      Action    = "sts:AssumeRole"
    }]
  })
}

resource "aws_sfn_activity" "worker" {
  name = local.activity_name
}

resource "aws_cloudwatch_log_group" "pipeline" {
  name              = "/aws/vendedlogs/states/graphene-pipeline"
  retention_in_days = 30
}

resource "aws_sfn_state_machine" "pipeline" {
  name     = local.state_machine_name
  role_arn = aws_iam_role.execution.arn

  definition = jsonencode({
    StartAt = "Work"
    States = {
      Work = {
        Type     = "Task"
        Resource = aws_sfn_activity.worker.id
        End      = true
      }
    }
  })

  logging_configuration {
    log_destination        = "${aws_cloudwatch_log_group.pipeline.arn}:*"
    include_execution_data = false
    level                  = "ERROR"
  }
}
