output "prod_vpc_id" {
  value = module.vpc_prod.vpc_id
}

output "shared_private_subnets" {
  value = module.vpc_shared.private_subnets
}
