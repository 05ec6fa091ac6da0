variable "name" {
  description = "Name of the web server; prefixes the names of its security group and alarm."
  type        = string
}

variable "ami_id" {
  description = "AMI to launch."
  type        = string
}

variable "instance_type" {
  description = "EC2 instance type."
  type        = string
  default     = "t3.micro"
}

variable "subnet_id" {
  description = "Subnet to launch the instance in."
  type        = string
}

variable "vpc_id" {
  description = "VPC of the security group."
  type        = string
}

variable "allowed_cidrs" {
  description = "CIDR blocks allowed to reach HTTP and HTTPS."
  type        = list(string)
}

variable "disable_api_termination" {
  description = "Enable EC2 termination protection."
  type        = bool
  default     = false
}

variable "root_volume_size" {
  description = "Size of the root volume in GiB."
  type        = number
  default     = 20
}

variable "cpu_alarm_threshold" {
  description = "Average CPU utilisation, in percent, above which the alarm fires."
  type        = number
}

variable "alarm_evaluation_periods" {
  description = "Number of 5-minute periods the CPU must stay above the threshold."
  type        = number
  default     = 3
}

variable "alarm_actions" {
  description = "ARNs notified when the CPU alarm fires."
  type        = list(string)
  default     = []
}

variable "instance_tags" {
  description = "Tags applied to the instance only."
  type        = map(string)
  default     = {}
}

variable "tags" {
  description = "Tags applied to every resource of the module."
  type        = map(string)
  default     = {}
}
