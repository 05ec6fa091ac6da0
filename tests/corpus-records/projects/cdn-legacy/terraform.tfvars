aliases            = ["example.com"]
iam_certificate_id = "A1B2C3D4E5F6G7EXAMPLE"
