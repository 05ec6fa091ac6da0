# driftback on an EKS cluster (deploy/kubernetes): the module makes the queue, the rule and a role
# the daemon's service account assumes through the cluster's OIDC provider.

provider "aws" {
  region = "eu-west-1"
}

module "driftback" {
  source = "../.."

  oidc_provider_arn          = "arn:aws:iam::123456789012:oidc-provider/oidc.eks.eu-west-1.amazonaws.com/id/EXAMPLED539D4633E53DE1B71EXAMPLE"
  kubernetes_namespace       = "driftback"
  kubernetes_service_account = "driftback"
}

# Annotate the service account with it: eks.amazonaws.com/role-arn.
output "role_arn" {
  value = module.driftback.role_arn
}

output "queue_url" {
  value = module.driftback.queue_url
}
