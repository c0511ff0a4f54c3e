package hostconfig

import (
	"strings"
	"testing"
)

// TestRenderSecretsOnlyIn0600Files: every file a host gets that holds the admin or the lock
// password is 0600, in the files list and in the #cloud-config user-data alike, and the
// setup step hands the server config to the service's user (who must read it) as 0600.
func TestRenderSecretsOnlyIn0600Files(t *testing.T) {
	for _, server := range ServerNames() {
		h := testHost()
		h.Server = server
		b, err := Render(h)
		if err != nil {
			t.Fatal(err)
		}
		holders := 0
		for _, f := range b.Files {
			if strings.Contains(f.Content, h.Spec.AdminPassword) || strings.Contains(f.Content, h.Spec.LockPassword) {
				holders++
				if f.Permissions != "0600" {
					t.Errorf("%s: %s holds a password with permissions %s, want 0600", server, f.Path, f.Permissions)
				}
				if !strings.Contains(b.UserData, "path: "+f.Path+"\n    permissions: \"0600\"") {
					t.Errorf("%s: user-data writes %s without permissions 0600:\n%s", server, f.Path, b.UserData)
				}
			}
		}
		if holders != 2 {
			t.Errorf("%s: %d files hold a password, want 2 (the server config and the admin password file)", server, holders)
		}
		conf := masterConf(b.Spec, b.Server, ConfDir+"/"+server+".conf")
		if !strings.Contains(conf, "SERVICE_USER='"+b.Server.User+"'\n") || b.Server.User == "" {
			t.Errorf("%s: master.conf does not name the service user:\n%s", server, conf)
		}
		if !strings.Contains(script, `chown "$SERVICE_USER:$SERVICE_GROUP" "$SERVER_CONF" && chmod 0600 "$SERVER_CONF"`) {
			t.Errorf("the setup step does not hand the server config to the service user as 0600")
		}
	}
}
