resource "aws_eks_node_group" "this" {
  for_each = var.node_groups

  cluster_name    = "platform"
  node_group_name = each.key
  node_role_arn   = "arn:aws:iam::123456789012:role/platform-nodes"
  subnet_ids      = ["subnet-0a1b2c3d4e5f60718", "subnet-0b2c3d4e5f6071829"]
  instance_types  = each.value.instance_types

  scaling_config {
    desired_size = each.value.desired_size
    min_size     = each.value.min_size
    max_size     = each.value.max_size
  }
}
