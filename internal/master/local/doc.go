// Package local runs a master.Spec on this machine: redis-server under the restart-policy
// supervisor of the subpackage supervisor (the daemon, one per master), in a data dir of its
// own. It is the lifecycle behind the provider's redlock_master resource, with no Terraform
// types.
//
// Start creates the data dir, writes redis.conf, supervisor.json and redlock-master.json, spawns
// the supervisor and waits until the master answers with the AOF on. Refresh reports what runs
// and what the live server says; Update changes a running master in place; Destroy stops it
// cleanly and, unless its data is kept, waits until the locks it granted have expired. Load
// rebuilds a Master from a data dir (terraform import).
//
// Errors tied to a setting are *master.FieldError (Field names the attribute to fix), other
// failures *Error; both have the summary and detail a user sees. Warnings are returned as
// values: the caller decides how to show them.
package local
