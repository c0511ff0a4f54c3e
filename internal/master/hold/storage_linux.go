package hold

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// DataFS is the type of the filesystem dir is on, as FieldDataFS publishes it.
func DataFS(dir string) (string, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return "", fmt.Errorf("statfs %s (the storage the data dir is on): %w", dir, err)
	}
	magic := int64(uint32(st.Type))
	if name, ok := fsNames[magic]; ok {
		return name, nil
	}
	return fmt.Sprintf("0x%x", magic), nil
}
