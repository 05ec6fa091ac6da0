resource "aws_eks_node_group" "this" {
  count = var.create ? 1 : 0

  cluster_name    = var.cluster_name
  node_group_name = var.name
  node_role_arn   = var.node_role_arn
  subnet_ids      = var.subnet_ids

  scaling_config {
    min_size     = var.min_size
    max_size     = var.max_size
    desired_size = var.desired_size
  }

  instance_types = var.instance_types
  capacity_type  = var.capacity_type
  labels         = var.labels

  tags = merge(var.tags, { Name = var.name })

  lifecycle {
    create_before_destroy = true
    # The cluster autoscaler owns the desired size.
    ignore_changes = [
      scaling_config[0].desired_size,
    ]
  }
}
