variable "distribution_comment" {
  type    = string
  default = "Images"
}

variable "aliases" {
  type = list(string)
}

variable "iam_certificate_id" {
  description = "The site's certificate, uploaded to IAM."
  type        = string
}
