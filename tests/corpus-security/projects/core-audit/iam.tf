resource "aws_iam_account_password_policy" "this" {
  minimum_password_length        = var.password_policy.minimum_password_length
  require_lowercase_characters   = var.password_policy.require_lowercase_characters
  require_uppercase_characters   = var.password_policy.require_uppercase_characters
  require_numbers                = var.password_policy.require_numbers
  require_symbols                = var.password_policy.require_symbols
  allow_users_to_change_password = var.password_policy.allow_users_to_change_password
  max_password_age               = var.password_policy.max_password_age
  password_reuse_prevention      = var.password_policy.password_reuse_prevention
}

# What the CI pipeline may deploy.
resource "aws_iam_policy" "ci_deploy" {
  name        = "${local.name}-ci-deploy"
  description = "Deployments from the CI pipeline"

  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [
      {
        Sid      = "EcsDeploy"
        Effect   = "Allow"
        Action   = ["ecs:UpdateService", "ecs:RegisterTaskDefinition", "ecs:DescribeServices", "ecs:DescribeTaskDefinition"]
        Resource = "*"
      },
      {
        Sid      = "PushImages"
        Effect   = "Allow"
        Action   = ["ecr:GetAuthorizationToken", "ecr:BatchCheckLayerAvailability", "ecr:InitiateLayerUpload", "ecr:UploadLayerPart", "ecr:CompleteLayerUpload", "ecr:PutImage"]
        Resource = "*"
      },
      {
        Sid      = "PassTaskRoles"
        Effect   = "Allow"
        Action   = "iam:PassRole"
        Resource = "arn:aws:iam::${local.account_id}:role/ecs-task-*"
      },
    ]
  })
}

resource "aws_iam_policy" "support_read" {
  name        = "${local.name}-support-read"
  description = "Read-only troubleshooting for the support rotation"

  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [
      {
        Sid      = "ReadLogsAndMetrics"
        Effect   = "Allow"
        Action   = ["logs:Describe*", "logs:Get*", "logs:FilterLogEvents", "cloudwatch:Describe*", "cloudwatch:Get*", "cloudwatch:List*"]
        Resource = "*"
      },
    ]
  })
}

resource "aws_iam_group" "support" {
  name = "${local.name}-support"
}

resource "aws_iam_group_policy_attachment" "support_read" {
  group      = aws_iam_group.support.name
  policy_arn = aws_iam_policy.support_read.arn
}
