log_groups = ["api", "worker", "audit"]

app_managed_policies = [
  "arn:aws:iam::aws:policy/AmazonSQSReadOnlyAccess",
  "arn:aws:iam::aws:policy/CloudWatchAgentServerPolicy",
]

worker_count = 2

node_groups = {
  general = {
    instance_types = ["m6i.large"]
    desired_size   = 3
    min_size       = 2
    max_size       = 6
  }
  batch = {
    instance_types = ["c6i.xlarge"]
    desired_size   = 1
    min_size       = 0
    max_size       = 10
  }
}

db_parameters = {
  log_min_duration_statement = "1000"
  idle_session_timeout       = "600000"
}
