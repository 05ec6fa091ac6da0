resource "aws_eks_cluster" "this" {
  count = var.create ? 1 : 0

  name     = var.cluster_name
  role_arn = var.iam_role_arn
  version  = var.cluster_version

  enabled_cluster_log_types = var.cluster_enabled_log_types

  vpc_config {
    subnet_ids              = var.subnet_ids
    endpoint_private_access = var.cluster_endpoint_private_access
    endpoint_public_access  = var.cluster_endpoint_public_access
    public_access_cidrs     = var.cluster_endpoint_public_access_cidrs
  }

  tags = merge(var.tags, var.cluster_tags)
}

module "eks_managed_node_group" {
  source = "./modules/eks-managed-node-group"

  for_each = { for k, v in var.eks_managed_node_groups : k => v if var.create }

  cluster_name  = aws_eks_cluster.this[0].name
  name          = try(each.value.name, each.key)
  node_role_arn = try(each.value.iam_role_arn, var.eks_managed_node_group_defaults.iam_role_arn)
  subnet_ids    = try(each.value.subnet_ids, var.eks_managed_node_group_defaults.subnet_ids, var.subnet_ids)

  min_size     = try(each.value.min_size, var.eks_managed_node_group_defaults.min_size, 1)
  max_size     = try(each.value.max_size, var.eks_managed_node_group_defaults.max_size, 3)
  desired_size = try(each.value.desired_size, var.eks_managed_node_group_defaults.desired_size, 1)

  instance_types = try(each.value.instance_types, var.eks_managed_node_group_defaults.instance_types, null)
  capacity_type  = try(each.value.capacity_type, var.eks_managed_node_group_defaults.capacity_type, null)
  labels         = try(each.value.labels, var.eks_managed_node_group_defaults.labels, null)

  tags = merge(var.tags, try(each.value.tags, var.eks_managed_node_group_defaults.tags, {}))
}
