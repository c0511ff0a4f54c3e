package provider

import (
	"sync"

	"github.com/redlock-kit/redlock-kit/internal/master/local/dirid"
)

// dataDirClaims remembers, for one provider process, which master each data_dir was
// planned for. Terraform plans every resource of a configuration through the same provider
// process, so two redlock_master resources that name one data_dir meet here at plan time,
// before either touches the disk.
type dataDirClaims struct {
	mu    sync.Mutex
	byDir map[string]dirClaim // dirid.Key of the data_dir -> who planned it
}

// dirClaim is a master that planned a data_dir, and the path it named.
type dirClaim struct{ name, path string }

// claim records dir for the master called name and returns the name of another master
// already planned with it ("" when none). Planning the same master again is no conflict.
// The claim is on the directory, not its spelling: a symlink to another master's dir, or a
// path under a symlink to its parent, is that dir (dirid.Key).
func (c *dataDirClaims) claim(dir, name string) string {
	if c == nil {
		return ""
	}
	key := dirid.Key(dir)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byDir == nil {
		c.byDir = map[string]dirClaim{}
	}
	// A key is a directory's device and inode (of the dir, or of its nearest existing parent):
	// once that directory is removed, the inode can be another directory's. A claim counts
	// only while its own path still leads to the same key.
	if other, ok := c.byDir[key]; ok && other.name != name && dirid.Key(other.path) == key {
		return other.name
	}
	c.byDir[key] = dirClaim{name: name, path: dir}
	return ""
}
