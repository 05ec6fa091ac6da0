resource "aws_db_instance" "reports" {
  identifier            = "my-database"
  engine                = "postgres"
  engine_version        = "16.4"
  instance_class        = "db.t4g.small"
  allocated_storage     = var.db_allocated_storage
  max_allocated_storage = var.db_max_allocated_storage
  username              = "reports"
  password              = var.db_password
  storage_encrypted     = true
  skip_final_snapshot   = true
}
