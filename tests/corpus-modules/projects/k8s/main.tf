locals {
  tags = {
    Environment = "prod"
    Team        = "platform"
  }
}

module "eks" {
  source  = "registry.acme.test/acme/eks/aws"
  version = "~> 20.0"

  cluster_name    = "k8s-prod"
  cluster_version = "1.29"
  iam_role_arn    = "arn:aws:iam::210987654321:role/k8s-prod-cluster"
  subnet_ids      = ["subnet-0b1c2d3e4f5a60011", "subnet-0b1c2d3e4f5a60012"]

  cluster_endpoint_public_access = false
  cluster_enabled_log_types      = ["api", "audit"]

  eks_managed_node_group_defaults = {
    iam_role_arn   = "arn:aws:iam::210987654321:role/k8s-prod-nodes"
    instance_types = ["m6i.large"]
  }

  eks_managed_node_groups = {
    general = {
      min_size     = 2
      max_size     = 5
      desired_size = 3
    }
    spot = {
      capacity_type  = "SPOT"
      instance_types = ["m6i.large", "m5.large"]
      min_size       = 0
      max_size       = 10
      desired_size   = 2
      labels = {
        workload = "batch"
      }
    }
  }

  tags = local.tags
}
