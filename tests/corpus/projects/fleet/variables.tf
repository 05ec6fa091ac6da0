variable "region" {
  description = "AWS region of the fleet."
  type        = string
  default     = "us-east-1"
}

variable "environment" {
  description = "Deployment environment."
  type        = string
  default     = "prod"
}

variable "ami_id" {
  description = "AMI of every instance of the fleet (Ubuntu 22.04)."
  type        = string
  default     = "ami-0fc5d935ebf8bc3bc"
}

variable "vpc_id" {
  description = "VPC of the fleet."
  type        = string
  default     = "vpc-0b7e4c1a9d2f36e50"
}

variable "subnet_ids" {
  description = "Private subnets, one per availability zone."
  type        = list(string)
  default = [
    "subnet-0c1d2e3f4a5b60711",
    "subnet-0c1d2e3f4a5b60722",
    "subnet-0c1d2e3f4a5b60733",
  ]
}

variable "worker_instance_types" {
  description = "Instance type of each batch worker; the length of the list is the number of workers."
  type        = list(string)
  default     = ["c6i.large", "c6i.large", "c6i.xlarge"]
}

variable "queues" {
  description = "Job queues of the fleet, by short name."
  type = map(object({
    visibility_timeout = number
    retention_seconds  = number
    delay_seconds      = optional(number, 0)
  }))
  default = {
    ingest = {
      visibility_timeout = 60
      retention_seconds  = 345600
    }
    render = {
      visibility_timeout = 300
      retention_seconds  = 86400
    }
    notify = {
      visibility_timeout = 30
      retention_seconds  = 345600
      delay_seconds      = 10
    }
  }
}

variable "data_buckets" {
  description = "Data lake buckets, by zone."
  type = map(object({
    versioning = bool
    data_class = string
  }))
  default = {
    raw = {
      versioning = true
      data_class = "internal"
    }
    curated = {
      versioning = false
      data_class = "internal"
    }
    exports = {
      versioning = true
      data_class = "confidential"
    }
  }
}

variable "functions" {
  description = "Lambda functions of the fleet, by short name."
  type = map(object({
    handler     = string
    memory_size = number
    timeout     = number
  }))
  default = {
    thumbnail = {
      handler     = "thumbnail.handler"
      memory_size = 512
      timeout     = 30
    }
    notifier = {
      handler     = "notifier.handler"
      memory_size = 256
      timeout     = 10
    }
  }
}
