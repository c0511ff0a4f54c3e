package provider

import (
	"path/filepath"
	"sync"
)

// dataDirClaims remembers, for one provider process, which master each data_dir was
// planned for. Terraform plans every resource of a configuration through the same provider
// process, so two redlock_master resources that name one data_dir meet here at plan time,
// before either touches the disk.
type dataDirClaims struct {
	mu    sync.Mutex
	byDir map[string]string // absolute data_dir -> master name
}

// claim records dir for the master called name and returns the name of another master
// already planned with it ("" when none). Planning the same master again is no conflict.
func (c *dataDirClaims) claim(dir, name string) string {
	if c == nil {
		return ""
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byDir == nil {
		c.byDir = map[string]string{}
	}
	if other, ok := c.byDir[dir]; ok && other != name {
		return other
	}
	c.byDir[dir] = name
	return ""
}
