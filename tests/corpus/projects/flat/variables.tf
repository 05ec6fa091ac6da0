variable "region" {
  description = "AWS region everything in this project lives in."
  type        = string
  default     = "us-east-1"
}
