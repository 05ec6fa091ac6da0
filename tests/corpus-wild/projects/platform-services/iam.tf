resource "aws_iam_role" "app" {
  name = "platform-app"

  assume_role_policy = jsonencode({
    Version = "2012-10-17"
    Statement = [
      {
        Effect    = "Allow"
        Principal = { Service = "ecs-tasks.amazonaws.com" }
        Action    = "sts:AssumeRole"
      },
    ]
  })
}

resource "aws_iam_role_policy_attachment" "app" {
  for_each = toset(var.app_managed_policies)

  role       = aws_iam_role.app.name
  policy_arn = each.value
}

resource "aws_iam_role_policy" "app_queue" {
  name = "queue-access"
  role = aws_iam_role.app.id

  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [
      {
        Effect   = "Allow"
        Action   = ["sqs:SendMessage", "sqs:ReceiveMessage"]
        Resource = "arn:aws:sqs:us-east-1:123456789012:platform-jobs"
      },
    ]
  })
}

resource "aws_iam_user" "deploy" {
  name = "platform-deploy"
}

resource "aws_iam_user_policy_attachment" "deploy_ecr" {
  user       = aws_iam_user.deploy.name
  policy_arn = "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryPowerUser"
}
