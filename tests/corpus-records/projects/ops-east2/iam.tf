resource "aws_iam_group" "admin" {
  name = "admin"
}

resource "aws_iam_group_membership" "admin" {
  name  = "admin-members"
  group = aws_iam_group.admin.name
  users = var.admins
}
