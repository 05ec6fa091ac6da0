locals {
  account_id = "111122223333"

  # alias name (without alias/) => key
  aliases = {
    "project-key" = "app"
    "my_alias"    = "signing"
  }
}
