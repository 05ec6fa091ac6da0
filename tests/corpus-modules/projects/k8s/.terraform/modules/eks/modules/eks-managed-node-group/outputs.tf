output "node_group_id" {
  value = try(aws_eks_node_group.this[0].id, "")
}
