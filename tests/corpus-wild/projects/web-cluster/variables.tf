variable "cluster_name" {
  description = "The name to use for all the cluster resources"
  type        = string
  default     = "webservers-prod"
}

variable "vpc_id" {
  description = "The VPC to deploy into"
  type        = string
  default     = "vpc-0a1b2c3d4e5f60718"
}

variable "subnet_ids" {
  description = "The subnets for the load balancer and the instances"
  type        = list(string)
  default     = ["subnet-0f1e2d3c4b5a69781", "subnet-0a9b8c7d6e5f40312"]
}
