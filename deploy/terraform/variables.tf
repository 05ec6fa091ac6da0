variable "name" {
  description = "Name of the deployment: prefix of the queues, the rule, the role and the service."
  type        = string
  default     = "driftback"
}

variable "tags" {
  description = "Tags for every resource the module creates."
  type        = map(string)
  default     = {}
}

variable "kms_key_arn" {
  description = "Customer managed KMS key for the queues. Null keeps SQS-managed encryption (SSE-SQS). The key's policy must let events.amazonaws.com use it (kms:GenerateDataKey, kms:Decrypt)."
  type        = string
  default     = null
}

variable "visibility_timeout_seconds" {
  description = "The queue's default visibility timeout; the daemon sets its own per receive and extends it while it works."
  type        = number
  default     = 60
}

variable "message_retention_seconds" {
  description = "How long the queue keeps an event the daemon has not taken yet (the daemon's longest outage it survives without backfill)."
  type        = number
  default     = 345600
}

variable "max_receive_count" {
  description = "Receives of one message before SQS moves it to the dead-letter queue."
  type        = number
  default     = 5
}

variable "event_bus_name" {
  description = "The event bus CloudTrail's events arrive on in this account and region."
  type        = string
  default     = "default"
}

variable "forwarding_account_ids" {
  description = "Member accounts allowed to forward their CloudTrail events to this account's bus (see modules/forwarder)."
  type        = list(string)
  default     = []
}

variable "trail_bucket_name" {
  description = "Bucket of an organisation trail whose new log files should notify the queue, and which the daemon reads them from. Null: no notification. The module then owns that bucket's notification configuration."
  type        = string
  default     = null
}

variable "trail_prefix" {
  description = "Key prefix of the trail's log files in trail_bucket_name: the notification's filter and the daemon's s3:GetObject grant."
  type        = string
  default     = "AWSLogs/"
}

variable "trail_kms_key_arn" {
  description = "KMS key the trail encrypts its log files with (SSE-KMS). Null: the log files use S3-managed encryption. The daemon gets kms:Decrypt on it; the key's policy must allow the daemon's role too."
  type        = string
  default     = null
}

variable "state_bucket_names" {
  description = "Buckets of the S3 backends holding the Terraform states of the infrastructure repository's stacks: the daemon may read their objects and list them (workspaces)."
  type        = list(string)
  default     = []
}

variable "state_kms_key_arns" {
  description = "Customer managed KMS keys the state buckets encrypt the states with (SSE-KMS): the daemon may decrypt with them, through S3 only. Each key's policy must allow the daemon's role too."
  type        = list(string)
  default     = []
}

variable "trail_bucket_account_id" {
  description = "Account owning trail_bucket_name when it is not this one (an organisation's log-archive account): the queue accepts the bucket's notifications from that account, and the notification itself is configured there with modules/trail-notification. Null: the bucket is in this account and the module configures its notification."
  type        = string
  default     = null
}

variable "manage_bus_policy" {
  description = "Write the event bus's resource policy (it replaces the bus's whole policy). False: leave it alone and merge the bus_policy_json output into the policy yourself."
  type        = bool
  default     = true
}

variable "bus_policy_documents" {
  description = "Other statements the event bus's policy must keep (JSON policy documents), merged with the forwarding statement when manage_bus_policy."
  type        = list(string)
  default     = []
}

variable "target_max_event_age_seconds" {
  description = "How long EventBridge retries delivering an event to the queue before it goes to the undelivered queue."
  type        = number
  default     = 86400
}

variable "alarm_actions" {
  description = "SNS topics (or other alarm actions) the CloudWatch alarms notify. Empty: the alarms are there, notifying nobody."
  type        = list(string)
  default     = []
}

variable "queue_age_alarm_seconds" {
  description = "Alarm when the oldest message in the queue is older than this: the daemon is down or behind."
  type        = number
  default     = 1800
}

variable "state_role_arns" {
  description = "Roles the stacks' S3 backends name in assume_role (states kept in other accounts): the daemon may assume them to read those states. Each role's trust policy must allow the daemon's role too."
  type        = list(string)
  default     = []
}

variable "ecs_task_role" {
  description = "Let ECS tasks assume the daemon's role (for the optional Fargate service or your own)."
  type        = bool
  default     = false
}

variable "oidc_provider_arn" {
  description = "IAM OIDC provider of an EKS cluster, for IAM roles for service accounts (IRSA). Null: no Kubernetes trust."
  type        = string
  default     = null
}

variable "kubernetes_namespace" {
  description = "Namespace of the daemon's service account (IRSA)."
  type        = string
  default     = "driftback"
}

variable "kubernetes_service_account" {
  description = "Name of the daemon's service account (IRSA)."
  type        = string
  default     = "driftback"
}

variable "create_ecs_service" {
  description = "Run the daemon as an ECS Fargate service."
  type        = bool
  default     = false
}

variable "ecs_cluster_arn" {
  description = "Cluster of the Fargate service (required when create_ecs_service)."
  type        = string
  default     = null
}

variable "subnet_ids" {
  description = "Private subnets of the Fargate service. They need a route to SQS, CloudTrail, the git remote and the knowledge base."
  type        = list(string)
  default     = []
}

variable "security_group_ids" {
  description = "Security groups of the Fargate service."
  type        = list(string)
  default     = []
}

variable "image" {
  description = "The driftback container image (deploy/Dockerfile, published by .github/workflows/release.yml). Pin it by digest in production: ghcr.io/driftback/driftback@sha256:..."
  type        = string
  default     = "ghcr.io/driftback/driftback:0.1.0"
}

variable "desired_count" {
  description = "Tasks of the Fargate service. More than one needs the knowledge base in Postgres (DRIFTBACK_STORE__URL), which leases change sets to one task at a time."
  type        = number
  default     = 1
}

variable "cpu" {
  description = "Fargate CPU units of the task."
  type        = number
  default     = 512
}

variable "memory" {
  description = "Fargate memory of the task, MiB."
  type        = number
  default     = 1024
}

variable "environment" {
  description = "Plain configuration of the daemon as DRIFTBACK_<SECTION>__<KEY> variables (docs/operations.md), for example DRIFTBACK_SERVE__REPO_URL. The queue's URL and region are set by the module."
  type        = map(string)
  default     = {}
}

variable "secrets" {
  description = "Environment variables read from Secrets Manager: name => secret ARN (for example GITHUB_TOKEN, DRIFTBACK_STORE__URL). Only the task's execution role can read them."
  type        = map(string)
  default     = {}
}

variable "log_kms_key_arn" {
  description = "KMS key for the Fargate service's log group. Null: CloudWatch's own encryption. The key's policy must allow the logs service."
  type        = string
  default     = null
}

variable "log_retention_days" {
  description = "Retention of the service's log group."
  type        = number
  default     = 30
}
