kms_keys = {
  app = {
    description = "Application data key"
    rotation    = true
    tags        = { Dept = "IT", Owner = "platform" }
  }
  signing = {
    description = "Release signing key"
    key_usage   = "SIGN_VERIFY"
    key_spec    = "RSA_2048"
    rotation    = false
  }
  global = {
    description  = "Multi-Region key for replicated data"
    rotation     = true
    multi_region = true
  }
}
