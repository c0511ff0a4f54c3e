variable "secrets_dir" {
  description = "Directory (absolute) where the passwords are kept instead of the state, one 0600 file per credential set (admin.json, tenant-<name>.json, monitor.json), created when missing. Default: .redlock-secrets beside the root module. Keep it like the state: lose it and the next apply makes new passwords and rotates the masters to them."
  type        = string
  default     = null

  validation {
    condition     = var.secrets_dir == null || startswith(coalesce(var.secrets_dir, "/"), "/")
    error_message = "secrets_dir must be an absolute path, e.g. \"/srv/terraform/redlock-secrets\": Terraform may run from another directory next time."
  }
}
