provider "aws" {
  region = "us-east-2"
}
