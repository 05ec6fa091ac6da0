module "webserver_cluster" {
  source = "./modules/services/webserver-cluster"

  cluster_name  = var.cluster_name
  ami           = "ami-0fc5d935ebf8bc3bc"
  instance_type = "t3.medium"
  vpc_id        = var.vpc_id
  subnet_ids    = var.subnet_ids

  min_size = 2
  max_size = 6

  custom_tags = {
    Team        = "web"
    Environment = "prod"
  }
}

# Temporary port for the load-test harness, kept outside the module on purpose.
resource "aws_security_group_rule" "allow_testing_inbound" {
  type              = "ingress"
  security_group_id = module.webserver_cluster.alb_security_group_id

  from_port   = 12345
  to_port     = 12345
  protocol    = "tcp"
  cidr_blocks = ["0.0.0.0/0"]
}
