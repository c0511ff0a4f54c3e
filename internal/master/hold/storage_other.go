//go:build !linux

package hold

// DataFS is the type of the filesystem dir is on; on systems other than Linux it is not
// read ("").
func DataFS(dir string) (string, error) { return "", nil }
