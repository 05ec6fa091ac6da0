module "functions" {
  source   = "./modules/function"
  for_each = var.functions

  name                   = "${local.name}-${each.key}"
  handler                = each.value.handler
  runtime                = each.value.runtime
  memory_size            = each.value.memory_size
  timeout                = each.value.timeout
  function_url_auth_type = each.value.function_url_auth
  artifact_bucket        = var.lambda_artifact_bucket
  artifact_key           = "${each.key}/${var.lambda_release}.zip"
  subnet_ids             = var.private_subnet_ids
  security_group_ids     = [var.lambda_security_group_id]
  kms_key_arn            = aws_kms_key.platform.arn

  environment = {
    APP_ENV   = var.environment
    LOG_LEVEL = "info"
  }

  tags = local.common_tags
}

resource "aws_lambda_permission" "order_webhook_api" {
  statement_id  = "AllowPublicApiInvoke"
  action        = "lambda:InvokeFunction"
  function_name = module.functions["order-webhook"].function_name
  principal     = "apigateway.amazonaws.com"
  source_arn    = "${aws_api_gateway_rest_api.public.execution_arn}/*/POST/webhooks/orders"
}

resource "aws_lambda_permission" "image_resize_uploads" {
  statement_id   = "AllowUploadsBucketInvoke"
  action         = "lambda:InvokeFunction"
  function_name  = module.functions["image-resize"].function_name
  principal      = "s3.amazonaws.com"
  source_arn     = var.uploads_bucket_arn
  source_account = local.account_id
}
