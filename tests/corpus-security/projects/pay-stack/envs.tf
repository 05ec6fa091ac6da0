module "staging" {
  source = "./modules/service"

  name            = "${local.name}-stg"
  environment     = "staging"
  settings        = var.environments["staging"]
  vpc_id          = var.vpc_id
  subnet_ids      = var.subnet_ids
  certificate_arn = var.certificate_arn
  log_bucket      = aws_s3_bucket.logs.id
  kms_key_arn     = aws_kms_key.data.arn
}

module "prod" {
  source = "./modules/service"

  name            = "${local.name}-prod"
  environment     = "prod"
  settings        = var.environments["prod"]
  vpc_id          = var.vpc_id
  subnet_ids      = var.subnet_ids
  certificate_arn = var.certificate_arn
  log_bucket      = aws_s3_bucket.logs.id
  kms_key_arn     = aws_kms_key.data.arn
}
