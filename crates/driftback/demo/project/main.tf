# The demo web stack: one instance, its security group, a log bucket and a job queue.

resource "aws_instance" "web" {
  ami           = "ami-0c55b159cbfafe1f0"
  instance_type = "t3.medium"
  subnet_id     = "subnet-0a1b2c3d4e5f60718"

  vpc_security_group_ids = [aws_security_group.web.id]

  tags = {
    Name = "web"
    Team = "platform"
  }
}

resource "aws_security_group" "web" {
  name        = "web"
  description = "Web tier"
  vpc_id      = "vpc-0123456789abcdef0"

  ingress {
    description = "HTTPS from the load balancer subnets"
    from_port   = 443
    to_port     = 443
    protocol    = "tcp"
    cidr_blocks = ["10.0.0.0/16"]
  }
}

resource "aws_s3_bucket" "logs" {
  bucket = "acme-demo-logs"
}

resource "aws_sqs_queue" "jobs" {
  name                       = "demo-jobs"
  visibility_timeout_seconds = 30
}
