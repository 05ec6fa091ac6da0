variable "create" {
  type    = bool
  default = true
}

variable "cluster_name" {
  type    = string
  default = ""
}

variable "cluster_version" {
  type    = string
  default = null
}

variable "iam_role_arn" {
  description = "The cluster's IAM role"
  type        = string
  default     = null
}

variable "subnet_ids" {
  type    = list(string)
  default = []
}

variable "cluster_endpoint_private_access" {
  type    = bool
  default = true
}

variable "cluster_endpoint_public_access" {
  type    = bool
  default = false
}

variable "cluster_endpoint_public_access_cidrs" {
  type    = list(string)
  default = ["0.0.0.0/0"]
}

variable "cluster_enabled_log_types" {
  type    = list(string)
  default = ["audit", "api", "authenticator"]
}

variable "cluster_tags" {
  type    = map(string)
  default = {}
}

variable "eks_managed_node_groups" {
  description = "Managed node groups by key"
  type        = any
  default     = {}
}

variable "eks_managed_node_group_defaults" {
  description = "Defaults for every managed node group"
  type        = any
  default     = {}
}

variable "tags" {
  type    = map(string)
  default = {}
}
