package hostconfig

import (
	"strings"
	"testing"

	"github.com/redlock-kit/redlock-kit/internal/redisconf"
)

// TestRenderNoPasswordOnTheHost: no file a host gets, and nothing in its user-data (gzip
// files are the Files entries, decoded), holds the admin or a lock password; the ACL file holds their hashes.
// The host's own admin password is made on the host (host_admin), so none is shipped.
func TestRenderNoPasswordOnTheHost(t *testing.T) {
	for _, server := range ServerNames() {
		h := testHost()
		h.Server = server
		b, err := Render(h)
		if err != nil {
			t.Fatal(err)
		}
		secrets := []string{h.Spec.AdminPassword, h.Spec.LockPassword}
		for _, f := range b.Files {
			for _, s := range secrets {
				if strings.Contains(f.Content, s) {
					t.Errorf("%s: %s holds a password", server, f.Path)
				}
			}
		}
		for _, s := range secrets {
			if strings.Contains(b.UserData, s) {
				t.Errorf("%s: the user-data holds a password", server)
			}
		}
		seed := file(t, b, ACLSeedPath).Content
		for _, s := range secrets {
			if !strings.Contains(seed, "#"+redisconf.HashPassword(s)) {
				t.Errorf("%s: the ACL file lacks a password's hash:\n%s", server, seed)
			}
		}
		for _, f := range b.Files {
			if f.Path == AdminPasswordPath {
				t.Errorf("%s: the user-data ships %s: the host makes it", server, AdminPasswordPath)
			}
		}
		if !strings.Contains(script, "\thost_admin || ") {
			t.Error("the setup step does not make the host's admin")
		}
	}
}
