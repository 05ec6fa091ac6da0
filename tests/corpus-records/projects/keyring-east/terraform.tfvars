kms_keys = {
  app = {
    description = "Application data key"
    rotation    = true
  }
}
