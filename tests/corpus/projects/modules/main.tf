# The shop: one storefront web server, two work queues and two buckets,
# each built from a local module.

module "web" {
  source = "./modules/web"

  name          = "${var.project}-web"
  ami_id        = var.ami_id
  instance_type = var.web_instance_type
  subnet_id     = var.subnet_id
  vpc_id        = var.vpc_id
  allowed_cidrs = ["10.0.0.0/16"]

  cpu_alarm_threshold = 80
  alarm_actions       = [var.alerts_topic_arn]

  instance_tags = {
    Backup = "daily"
  }

  tags = merge(local.common_tags, { Service = "storefront" })
}

module "orders_queue" {
  source = "./modules/queue"

  name                       = "${var.project}-orders"
  visibility_timeout_seconds = 60

  tags = merge(local.common_tags, { Service = "orders" })
}

module "emails_queue" {
  source = "./modules/queue"

  name                       = "${var.project}-emails"
  visibility_timeout_seconds = var.emails_visibility_timeout
  delay_seconds              = 5

  tags = merge(local.common_tags, { Service = "notifications" })
}

module "assets" {
  source = "./modules/bucket"

  bucket_name        = "acme-shop-assets-prod"
  versioning_enabled = true

  tags = merge(local.common_tags, { DataClass = "public" })
}

module "logs" {
  source = "./modules/bucket"

  bucket_name = "acme-shop-logs-prod"

  tags = merge(local.common_tags, { DataClass = "internal" })
}
