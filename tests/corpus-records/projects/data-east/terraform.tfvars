databases = {
  "production-mysql" = {
    engine                = "mysql"
    engine_version        = "8.0.36"
    instance_class        = "db.r6g.large"
    allocated_storage     = 200
    max_allocated_storage = 1000
    deletion_protection   = true
  }
  "production-db" = {
    engine                = "postgres"
    engine_version        = "16.4"
    instance_class        = "db.m6g.large"
    allocated_storage     = 100
    max_allocated_storage = 1000
    deletion_protection   = false
  }
  "production-mysql-db" = {
    engine              = "mysql"
    engine_version      = "8.0.36"
    instance_class      = "db.t4g.medium"
    allocated_storage   = 50
    deletion_protection = false
  }
}
