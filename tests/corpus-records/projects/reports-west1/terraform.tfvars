db_allocated_storage = 20
