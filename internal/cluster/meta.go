package cluster

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/google/uuid"
)

// metaPropertiesFile is Kafka's name for the file that binds a data
// directory to one cluster and one node.
const metaPropertiesFile = "meta.properties"

// metaProperties is the content of meta.properties.
type metaProperties struct {
	ClusterID string
	NodeID    int32
}

// newClusterID returns a random cluster id in Kafka's form: 16 random
// bytes, base64url without padding (22 characters). Like Kafka it never
// starts with '-', which command lines would take for an option.
func newClusterID() string {
	for {
		u := uuid.New()
		if id := base64.RawURLEncoding.EncodeToString(u[:]); id[0] != '-' {
			return id
		}
	}
}

// readMetaProperties reads dir/meta.properties. ok is false if the file
// does not exist.
func readMetaProperties(dir string) (m metaProperties, ok bool, err error) {
	path := filepath.Join(dir, metaPropertiesFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return metaProperties{}, false, nil
	}
	if err != nil {
		return metaProperties{}, false, fmt.Errorf("cluster: read %s: %w", path, err)
	}
	props := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		k, v, _ := strings.Cut(line, "=")
		props[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	if err := sc.Err(); err != nil {
		return metaProperties{}, false, fmt.Errorf("cluster: read %s: %w", path, err)
	}
	if v := props["version"]; v != "1" {
		return metaProperties{}, false, fmt.Errorf("cluster: %s: unsupported version %q", path, v)
	}
	m.ClusterID = props["cluster.id"]
	if m.ClusterID == "" {
		return metaProperties{}, false, fmt.Errorf("cluster: %s: no cluster.id", path)
	}
	n, err := strconv.ParseInt(props["node.id"], 10, 32)
	if err != nil {
		return metaProperties{}, false, fmt.Errorf("cluster: %s: node.id: %w", path, err)
	}
	m.NodeID = int32(n)
	return m, true, nil
}

// writeMetaProperties writes dir/meta.properties durably: a temporary file,
// fsync, rename, fsync of the directory.
func writeMetaProperties(dir string, m metaProperties) error {
	path := filepath.Join(dir, metaPropertiesFile)
	content := fmt.Sprintf("version=1\ncluster.id=%s\nnode.id=%d\n", m.ClusterID, m.NodeID)
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("cluster: write %s: %w", path, err)
	}
	_, err = f.WriteString(content)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("cluster: write %s: %w", path, err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("cluster: sync %s: %w", dir, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("cluster: sync %s: %w", dir, err)
	}
	return nil
}

// BindLogDir binds another log dir of this broker (log.dirs beyond the
// first, which Open binds) to the cluster and node, as Kafka writes
// meta.properties in every log dir: it writes dir/meta.properties if
// there is none, and fails with ErrInconsistentClusterID or
// ErrInconsistentNodeID if the one there names another cluster or node
// (a disk moved from another broker).
func (c *Cluster) BindLogDir(dir string) error {
	m, ok, err := readMetaProperties(dir)
	if err != nil {
		return err
	}
	if !ok {
		return writeMetaProperties(dir, metaProperties{ClusterID: c.clusterID, NodeID: c.cfg.NodeID})
	}
	if m.NodeID != c.cfg.NodeID {
		return fmt.Errorf("%w: meta.properties in %s has node.id=%d, configured %d", ErrInconsistentNodeID, dir, m.NodeID, c.cfg.NodeID)
	}
	if m.ClusterID != c.clusterID {
		return fmt.Errorf("%w: meta.properties in %s has cluster.id=%s, the cluster is %s", ErrInconsistentClusterID, dir, m.ClusterID, c.clusterID)
	}
	return nil
}
