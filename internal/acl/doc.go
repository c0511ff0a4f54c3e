// Package acl changes the lock users of running masters over the admin connection: it
// adds, changes and removes users, rotates their passwords with an overlap, reads the
// users back to find drift, and saves them to the ACL file the server loads at start.
//
// A user is defined by the same rules the hosts are rendered with (internal/redisconf:
// LockUserCommands, the key prefix as `~<prefix>*` and `&<prefix>*`), with its passwords
// given only as SHA-256 hashes (`#<hex>`): the plain password never leaves the caller.
// A user with two hashes accepts both passwords, which is how a rotation keeps every
// client working while they move to the new one.
//
// Every change is idempotent: a user whose live definition already matches is not
// touched (an ACL SETUSER that resets a user could drop its pub/sub subscriptions), and
// ACL SAVE runs after every apply, so a change made by hand without a save is persisted
// too. A master with no ACL file is refused before anything changes: what it accepted
// would be lost at its next restart.
//
// The package has no Terraform types: provider/resource_users.go converts and reports.
package acl
