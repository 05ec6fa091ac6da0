resource "aws_instance" "runner" {
  ami                    = "ami-0c55b159cbfafe1f0"
  instance_type          = "t3.medium"
  subnet_id              = "subnet-0a9b8c7d6e5f40312"
  vpc_security_group_ids = ["sg-0f1e2d3c4b5a69788"]
  user_data              = file("${path.module}/bootstrap.sh")

  metadata_options {
    http_tokens = "required"
  }

  root_block_device {
    encrypted = true
  }

  tags = {
    Name = "build-runner"
  }
}
