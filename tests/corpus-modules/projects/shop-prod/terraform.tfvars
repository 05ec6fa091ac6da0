db_instance_class        = "db.r6g.large"
db_backup_retention_days = 7
