resource "aws_iam_account_password_policy" "this" {
  minimum_password_length        = var.password_policy.minimum_length
  max_password_age               = var.password_policy.max_age
  password_reuse_prevention      = var.password_policy.reuse_prevention
  require_lowercase_characters   = true
  require_uppercase_characters   = true
  require_numbers                = true
  require_symbols                = true
  allow_users_to_change_password = true
}

# --- Console users: MFA enforced, then they switch into the access roles ----------------------------

data "aws_iam_policy_document" "enforce_mfa" {
  statement {
    sid       = "ManageOwnMFA"
    actions   = ["iam:ChangePassword", "iam:CreateVirtualMFADevice", "iam:EnableMFADevice", "iam:GetUser"]
    resources = ["arn:${local.partition}:iam::${local.account_id}:*/$${aws:username}"]
  }

  statement {
    sid         = "DenyWithoutMFA"
    effect      = "Deny"
    not_actions = ["iam:ChangePassword", "iam:CreateVirtualMFADevice", "iam:EnableMFADevice", "iam:GetUser", "sts:GetSessionToken"]
    resources   = ["*"]

    condition {
      test     = "BoolIfExists"
      variable = "aws:MultiFactorAuthPresent"
      values   = ["false"]
    }
  }
}

resource "aws_iam_policy" "enforce_mfa" {
  name        = "${local.name}-enforce-mfa"
  description = "Denies everything but MFA self-service until the user signs in with MFA"
  policy      = data.aws_iam_policy_document.enforce_mfa.json
  tags        = local.tags
}

data "aws_iam_policy_document" "assume_access_roles" {
  statement {
    actions   = ["sts:AssumeRole"]
    resources = [module.readonly_role.arn, module.breakglass_role.arn]
  }
}

resource "aws_iam_policy" "assume_access_roles" {
  name        = "${local.name}-assume-access-roles"
  description = "Lets console users switch into the account's access roles"
  policy      = data.aws_iam_policy_document.assume_access_roles.json
  tags        = local.tags
}

resource "aws_iam_group" "console_users" {
  name = "${local.name}-console-users"
  path = "/people/"
}

resource "aws_iam_group_membership" "console_users" {
  name  = "${local.name}-console-users"
  group = aws_iam_group.console_users.name
  users = var.console_users
}

resource "aws_iam_group_policy_attachment" "console_users" {
  for_each = {
    enforce_mfa     = aws_iam_policy.enforce_mfa.arn
    assume_roles    = aws_iam_policy.assume_access_roles.arn
    change_password = "arn:aws:iam::aws:policy/IAMUserChangePassword"
  }

  group      = aws_iam_group.console_users.name
  policy_arn = each.value
}

# --- Access roles ------------------------------------------------------------------------------------

module "breakglass_role" {
  source = "./modules/access-role"

  name                   = "${local.name}-breakglass"
  description            = "Emergency administrator access; every use pages the security on-call"
  trusted_principal_arns = [local.account_root_arn]
  managed_policy_arns    = ["arn:aws:iam::aws:policy/AdministratorAccess"]
  tags                   = local.tags
}

module "security_audit_role" {
  source = "./modules/access-role"

  name                   = "${local.name}-security-audit"
  description            = "Read-only audit access for the central security tooling account"
  trusted_principal_arns = ["arn:${local.partition}:iam::${var.security_tooling_account_id}:root"]
  require_mfa            = false
  max_session_duration   = 14400
  managed_policy_arns = [
    "arn:aws:iam::aws:policy/SecurityAudit",
    "arn:aws:iam::aws:policy/job-function/ViewOnlyAccess",
  ]
  tags = local.tags
}

module "readonly_role" {
  source = "./modules/access-role"

  name                   = "${local.name}-readonly"
  description            = "Read-only console access for engineers"
  trusted_principal_arns = [local.account_root_arn]
  max_session_duration   = 28800
  managed_policy_arns    = ["arn:aws:iam::aws:policy/ReadOnlyAccess"]
  tags                   = merge(local.tags, { Audience = "engineering" })
}
