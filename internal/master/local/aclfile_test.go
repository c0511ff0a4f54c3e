package local

import (
	"strings"
	"testing"

	"github.com/redlock-kit/redlock-kit/internal/master"
)

// TestLocalRuntimeLoadsNoACLFile: the redis.conf the local runtime writes (writeFiles) keeps
// its users in itself and names no ACL file, so a master whose AOF is lost has no ACL file
// saved with lock users on to come back with, and the fence seeding start rule
// (redisconf.SeedScenarios) has nothing to act on here (docs/protocol.md, "Empty masters and
// fence registers"). Should the local runtime ever load an ACL file, its start must apply
// redisconf.ACLAtStartFor first, as the host gate does: this test fails until then.
func TestLocalRuntimeLoadsNoACLFile(t *testing.T) {
	dir := t.TempDir()
	s := master.Spec{Name: "m1", Bind: "127.0.0.1", Port: 6390, DataDir: dir, AdminPassword: strings.Repeat("a", 32),
		LockUsers: []master.LockUser{{Name: "app", Password: strings.Repeat("p", 32), KeyPrefix: "app:"}}}
	conf := s.RedisConfig(dir)
	text, err := conf.Render()
	if err != nil {
		t.Fatal(err)
	}
	if conf.ACLFile != "" || strings.Contains(text, "\naclfile ") {
		t.Fatalf("the local runtime's redis.conf loads an ACL file (%q): apply redisconf.ACLAtStartFor at its start, then change this test", conf.ACLFile)
	}
	if !strings.Contains(text, "\nuser app ") {
		t.Fatalf("the lock user is not in redis.conf:\n%s", text)
	}
}
