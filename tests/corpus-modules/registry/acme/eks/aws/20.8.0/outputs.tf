output "cluster_name" {
  value = try(aws_eks_cluster.this[0].name, "")
}
