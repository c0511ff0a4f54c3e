package provider

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/redlock-kit/redlock-kit/internal/master/local"
)

// TestAccMaster_dataDirAliasRefused: a second master whose data_dir is another spelling of a
// running master's dir (a symlink to it, a path under a symlink to its parent, a bind mount
// of it) is refused at plan, and the running master is left alone: same processes, serving.
func TestAccMaster_dataDirAliasRefused(t *testing.T) {
	m := newTestMaster(t)
	root := t.TempDir()
	link := filepath.Join(root, "link-to-m")
	parentLink := filepath.Join(root, "link-to-parent")
	for target, name := range map[string]string{m.dir: link, filepath.Dir(m.dir): parentLink} {
		if err := os.Symlink(target, name); err != nil {
			t.Fatal(err)
		}
	}
	second := func(dir string) string {
		return masterConfig(m, "") + fmt.Sprintf(`
resource "redlock_master" "x" {
  name         = "x"
  data_dir     = %q
  max_lock_ttl = %q
}
`, dir, testTTL)
	}
	var supervisorPID, pid int
	unchanged := func(*terraform.State) error {
		if m.supervisorPID != supervisorPID || m.pid != pid {
			return fmt.Errorf("m1 runs as supervisor %d / redis %d, was %d / %d: it was taken over",
				m.supervisorPID, m.pid, supervisorPID, pid)
		}
		return m.checkServes(t)
	}
	refused := regexp.MustCompile(`data_dir is in use|data_dir shared by two masters`)
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviderFactories,
		CheckDestroy:             m.checkGone(false),
		Steps: []resource.TestStep{
			{Config: masterConfig(m, ""), Check: resource.ComposeAggregateTestCheckFunc(m.capture(),
				func(*terraform.State) error {
					supervisorPID, pid = m.supervisorPID, m.pid
					// What a plan in another root module checks (no claim of this process
					// sees it): the running supervisor, whatever the spelling.
					for _, alias := range []string{link, filepath.Join(parentLink, "m"), m.dir + "/", filepath.Join(m.dir, "..", "m")} {
						err := local.CheckDataDirFree(alias)
						if err == nil || !strings.Contains(err.Error(), `master "m1"`) {
							return fmt.Errorf("CheckDataDirFree(%s) = %v, want data_dir in use by master \"m1\"", alias, err)
						}
					}
					return checkBindMountAlias(t, m.dir)
				})},
			{Config: second(link), ExpectError: refused},
			{Config: second(filepath.Join(parentLink, "m")), ExpectError: refused},
			{Config: masterConfig(m, ""), Check: resource.ComposeAggregateTestCheckFunc(m.capture(), unchanged)},
			{
				// m1 unsupervised: its redis-server serves on. Another master must not stop it
				// and take the dir over (m1's own plan replaces it there); m1 itself may.
				PreConfig: func() {
					mustKill(t, m.supervisorPID)
					for _, alias := range []string{link, m.dir} {
						if err := local.CheckOrphanOwner(alias, "x"); err == nil || !strings.Contains(err.Error(), `of master "m1" still serves`) {
							t.Errorf("CheckOrphanOwner(%s, x) = %v, want m1's unsupervised server named", alias, err)
						}
					}
					if err := local.CheckOrphanOwner(link, "m1"); err != nil {
						t.Errorf("CheckOrphanOwner(%s, m1) = %v, want nil (its own dir)", link, err)
					}
				},
				Config: masterConfig(m, ""),
				Check:  resource.TestCheckResourceAttr(testAddr, "status", "running"),
			},
		},
	})
}

// checkBindMountAlias: a bind mount of dir (same device and inode, no symlink to resolve) is
// dir too. It needs the right to mount (root): without it the case is logged and not run.
func checkBindMountAlias(t *testing.T, dir string) error {
	mnt := filepath.Join(t.TempDir(), "bind-of-m")
	if err := os.Mkdir(mnt, 0o700); err != nil {
		return err
	}
	if err := syscall.Mount(dir, mnt, "", syscall.MS_BIND, ""); err != nil {
		if errors.Is(err, syscall.EPERM) {
			t.Logf("bind mount not permitted here (%v): the bind-mount alias is not checked", err)
			return nil
		}
		return fmt.Errorf("mount --bind %s %s: %v", dir, mnt, err)
	}
	defer func() {
		if err := syscall.Unmount(mnt, syscall.MNT_DETACH); err != nil {
			t.Errorf("umount %s: %v", mnt, err)
		}
	}()
	if err := local.CheckDataDirFree(mnt); err == nil || !strings.Contains(err.Error(), `master "m1"`) {
		return fmt.Errorf("CheckDataDirFree(%s), a bind mount of m1's dir = %v, want in use by master \"m1\"", mnt, err)
	}
	return nil
}

// TestAccMaster_newMastersAliasRefused: two new masters of one configuration whose data dirs
// are one directory by two spellings are refused at plan; nothing is created.
func TestAccMaster_newMastersAliasRefused(t *testing.T) {
	root := t.TempDir()
	real := filepath.Join(root, "real")
	if err := os.Mkdir(real, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(root, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	config := ""
	for name, dir := range map[string]string{"a": filepath.Join(real, "m"), "b": filepath.Join(link, "m")} {
		config += fmt.Sprintf(`
resource "redlock_master" %q {
  name         = %q
  data_dir     = %q
  max_lock_ttl = %q
}
`, name, name, dir, testTTL)
	}
	t.Cleanup(func() { stopDataDir(t, filepath.Join(real, "m")) })
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviderFactories,
		Steps: []resource.TestStep{
			{Config: config, PlanOnly: true, ExpectError: regexp.MustCompile(`data_dir shared by two masters`)},
			{Config: config, ExpectError: regexp.MustCompile(`data_dir shared by two masters`),
				Check: func(*terraform.State) error { return nil }},
		},
		CheckDestroy: func(*terraform.State) error {
			if _, err := os.Stat(filepath.Join(real, "m")); err == nil {
				return fmt.Errorf("%s was created", filepath.Join(real, "m"))
			}
			return nil
		},
	})
}
