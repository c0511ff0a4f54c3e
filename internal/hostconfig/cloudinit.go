package hostconfig

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"fmt"

	"go.yaml.in/yaml/v3"
)

// MaxUserDataBytes is EC2's limit on user-data (before base64). The gzip form must fit;
// cloud-init unpacks gzipped user-data itself, so a plain form above the limit (TLS with
// several lock users) is given to the cloud as user_data_base64_gzip.
const MaxUserDataBytes = 16 * 1024

type cloudConfigDoc struct {
	PackageUpdate bool            `yaml:"package_update,omitempty"`
	Packages      []string        `yaml:"packages,omitempty"`
	WriteFiles    []cloudInitFile `yaml:"write_files"`
	RunCmd        [][]string      `yaml:"runcmd"`
}

type cloudInitFile struct {
	Path        string `yaml:"path"`
	Permissions string `yaml:"permissions,omitempty"` // "": cloud-init's default, 0644
	Encoding    string `yaml:"encoding,omitempty"`
	Content     string `yaml:"content"`
}

// The sizes above which a file goes into write_files gzipped and base64-encoded (cloud-init's
// encoding gz+b64). readableFilesUpTo keeps every settings file readable in the user-data
// (master.conf, the server config, the ACL file, the drop-ins) and gzips only the function
// library and the host script. compactFilesOver also gzips the settings files of half a KiB
// and more (master.conf, the server config, the ACL file, the unit's drop-in), which brings
// the plain form under MaxUserDataBytes with the exporters on. The files on the host are the same either way.
const (
	readableFilesUpTo = 4096
	compactFilesOver  = 512
)

// userData renders the bundle's user-data: readable when that fits in MaxUserDataBytes;
// else compact when that fits; else readable again, as its gzip form (what the cloud is then
// given) is the smaller one: gzipping a file inside it leaves the outer gzip less to do.
func userData(b *Bundle, installPackages bool) (string, error) {
	readable, err := cloudConfig(b, installPackages, readableFilesUpTo)
	if err != nil || len(readable) <= MaxUserDataBytes {
		return readable, err
	}
	compact, err := cloudConfig(b, installPackages, compactFilesOver)
	if err != nil || len(compact) <= MaxUserDataBytes {
		return compact, err
	}
	return readable, nil
}

// contentOf returns the file as written in write_files: its content, or for a file above
// gzipOver its gzip+base64 form and the encoding that tells cloud-init so.
func contentOf(f File, gzipOver int) (content, encoding string, err error) {
	if len(f.Content) <= gzipOver {
		return f.Content, "", nil
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if _, err := zw.Write([]byte(f.Content)); err != nil {
		return "", "", err
	}
	if err := zw.Close(); err != nil {
		return "", "", err
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes()), "gz+b64", nil
}

// cloudConfig renders the bundle as #cloud-config: write_files, then runcmd runs the
// commands (cloud-init's final stage, after any package install).
func cloudConfig(b *Bundle, installPackages bool, gzipOver int) (string, error) {
	doc := cloudConfigDoc{RunCmd: b.Commands}
	if installPackages {
		doc.PackageUpdate = true
		doc.Packages = b.Packages
	}
	for _, f := range b.Files {
		content, encoding, err := contentOf(f, gzipOver)
		if err != nil {
			return "", fmt.Errorf("hostconfig: render cloud-config: %s: %w", f.Path, err)
		}
		perm := f.Permissions
		if perm == "0644" {
			perm = "" // cloud-init's default: every byte counts against MaxUserDataBytes
		}
		doc.WriteFiles = append(doc.WriteFiles, cloudInitFile{Path: f.Path, Permissions: perm, Encoding: encoding, Content: content})
	}
	var out bytes.Buffer
	out.WriteString("#cloud-config\n")
	if gzipOver >= readableFilesUpTo { // the compact form saves these bytes too
		fmt.Fprintf(&out, "# redlock-kit: Redlock master %q (%s) on %s\n", b.Spec.Name, b.Server.Package, b.Spec.Addr())
	}
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return "", fmt.Errorf("hostconfig: render cloud-config: %w", err)
	}
	if err := enc.Close(); err != nil {
		return "", err
	}
	return out.String(), nil
}

// gzipBase64 returns s gzipped and base64-encoded, refusing a gzip form larger than
// MaxUserDataBytes: no cloud would accept it.
func gzipBase64(s string) (string, error) {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if _, err := zw.Write([]byte(s)); err != nil {
		return "", err
	}
	if err := zw.Close(); err != nil {
		return "", err
	}
	if buf.Len() > MaxUserDataBytes {
		return "", fmt.Errorf("hostconfig: the user-data is %d bytes gzipped (%d plain), more than the %d bytes clouds accept: "+
			"shorten the hooks or use fewer lock users", buf.Len(), len(s), MaxUserDataBytes)
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes()), nil
}
