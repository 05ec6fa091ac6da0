resource "aws_cloudwatch_log_group" "eks" {
  # EKS writes control plane logs here; created first so that retention and the key apply.
  name              = "/aws/eks/${local.name}/cluster"
  retention_in_days = 90
  kms_key_id        = aws_kms_key.platform.arn

  tags = local.common_tags
}

resource "aws_eks_cluster" "main" {
  name     = local.name
  version  = var.eks_version
  role_arn = aws_iam_role.eks_cluster.arn

  enabled_cluster_log_types = ["api", "audit", "authenticator"]

  vpc_config {
    subnet_ids              = var.private_subnet_ids
    endpoint_private_access = true
    endpoint_public_access  = true
    public_access_cidrs     = var.eks_public_access_cidrs
  }

  encryption_config {
    resources = ["secrets"]

    provider {
      key_arn = aws_kms_key.platform.arn
    }
  }

  access_config {
    authentication_mode                         = "API"
    bootstrap_cluster_creator_admin_permissions = false
  }

  tags = local.common_tags

  depends_on = [
    aws_cloudwatch_log_group.eks,
    aws_iam_role_policy_attachment.eks_cluster,
  ]
}
