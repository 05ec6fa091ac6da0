# Tuning agreed after the March load test (OPS-1182).
queue_visibility_timeout = 45
worker_memory_mb         = 1024
db_backup_retention_days = 14
