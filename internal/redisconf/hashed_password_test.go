package redisconf

import (
	"strings"
	"testing"
)

// A config for a host can carry passwords as their hashes only: the ACL file gets the hash
// as given (the same line as for the password itself), and redis.conf without an ACL file,
// which would need the password, is refused.
func TestHashedPassword(t *testing.T) {
	admin, lock := "admin-password-0123456789", "lock-password-0123456789"
	plain := Config{Port: 6379, DataDir: "/d", ACLFile: "/d/users.acl", AdminPassword: admin,
		LockUsers: []LockUser{{Name: "billing", KeyPrefix: "billing:", Password: lock}}}
	hashed := plain
	hashed.AdminPassword = HashedPassword(HashPassword(admin))
	hashed.LockUsers = []LockUser{{Name: "billing", KeyPrefix: "billing:", Password: HashedPassword(HashPassword(lock))}}

	want, err := plain.RenderACL()
	if err != nil {
		t.Fatal(err)
	}
	got, err := hashed.RenderACL()
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("ACL file from hashes:\n%s\nwant the same as from the passwords:\n%s", got, want)
	}
	if !strings.Contains(got, "#"+HashPassword(admin)) || strings.Contains(got, HashPassword(HashedPassword(HashPassword(admin)))) {
		t.Errorf("the admin's hash was hashed again:\n%s", got)
	}
	if _, err := hashed.Render(); err != nil {
		t.Errorf("redis.conf with an ACL file and hashed passwords: %v", err)
	}
	hashed.ACLFile = ""
	if _, err := hashed.Render(); err == nil || !strings.Contains(err.Error(), "needs an ACL file") {
		t.Errorf("redis.conf without an ACL file and a hashed password: err = %v, want a refusal", err)
	}
	plain.ACLFile = ""
	if _, err := plain.Render(); err != nil { // the negative control: the same config with passwords renders
		t.Errorf("redis.conf without an ACL file and passwords: %v", err)
	}
}
