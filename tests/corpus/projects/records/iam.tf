# People and their groups. Membership of `admin` is granted in review only.
resource "aws_iam_user" "bob" {
  name = "Bob"
}

resource "aws_iam_group" "admin" {
  name = "admin"
}

resource "aws_iam_group_membership" "admin" {
  name  = "admin-members"
  group = aws_iam_group.admin.name
  users = []
}
