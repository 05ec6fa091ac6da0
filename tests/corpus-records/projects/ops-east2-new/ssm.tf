resource "aws_ssm_document" "example" {
  name            = "example-Document"
  document_type   = "Command"
  document_format = "YAML"

  content = <<-DOC
    schemaVersion: "2.2"
    description: "Print the host name"
    mainSteps:
      - action: aws:runShellScript
        name: hostname
        inputs:
          runCommand:
            - hostname
  DOC
}
