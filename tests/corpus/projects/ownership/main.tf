# The order service: an API instance, its worker function and queue, and the web fleet.
# Who owns which field is written down in .driftback/policy.toml.

resource "aws_instance" "api" {
  ami           = "ami-0c55b159cbfafe1f0"
  instance_type = "t3.medium"
  subnet_id     = "subnet-0a1b2c3d4e5f60718"

  tags = {
    Name = "orders-api"
    Team = "orders"
  }
}

resource "aws_autoscaling_group" "web" {
  name                = "orders-web"
  min_size            = 2
  max_size            = 6
  desired_capacity    = 2
  vpc_zone_identifier = ["subnet-0a1b2c3d4e5f60718", "subnet-0b2c3d4e5f6a70829"]

  launch_template {
    id      = "lt-0a9b8c7d6e5f40312"
    version = "$Latest"
  }
}

resource "aws_sqs_queue" "orders" {
  name                       = "orders-intake"
  visibility_timeout_seconds = 30
  message_retention_seconds  = 345600

  tags = {
    Team = "orders"
  }
}

resource "aws_lambda_function" "worker" {
  function_name = "orders-worker"
  role          = "arn:aws:iam::123456789012:role/orders-worker-lambda"
  runtime       = "python3.11"
  handler       = "worker.handler"
  filename      = "build/worker.zip"
  memory_size   = 512
  timeout       = 30

  tags = {
    Team = "orders"
  }
}

# The batch fleet comes from the public registry: this repository does not own its resources' blocks.
module "batch" {
  source  = "terraform-aws-modules/autoscaling/aws"
  version = "7.4.0"

  name                = "orders-batch"
  min_size            = 0
  max_size            = 10
  desired_capacity    = 1
  vpc_zone_identifier = ["subnet-0a1b2c3d4e5f60718"]
}
