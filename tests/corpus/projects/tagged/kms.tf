resource "aws_kms_key" "s3" {
  description             = "Encrypts objects in the build artifact bucket"
  deletion_window_in_days = 30
  enable_key_rotation     = true

  tags = {
    Name = "build-artifacts-s3"
  }
}

resource "aws_kms_alias" "s3" {
  name          = "alias/build-artifacts-s3"
  target_key_id = aws_kms_key.s3.key_id
}
