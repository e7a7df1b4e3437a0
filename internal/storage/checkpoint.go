package storage

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"samsa/internal/vfs"
)

// Checkpoint file names in the log dir.
const (
	recoveryPointFile  = "recovery-point-offset-checkpoint"
	logStartOffsetFile = "log-start-offset-checkpoint"
	cleanShutdownFile  = ".kafka_cleanshutdown"
	metadataFile       = "partition.metadata"
)

// writeCheckpoint writes offsets in Kafka's checkpoint text format to name:
// a tmp file, fsynced, renamed over name, then the directory fsynced.
func writeCheckpoint(fs vfs.FS, dir, name string, offsets map[TopicPartition]int64) error {
	tps := make([]TopicPartition, 0, len(offsets))
	for tp := range offsets {
		tps = append(tps, tp)
	}
	sort.Slice(tps, func(i, j int) bool {
		if tps[i].Topic != tps[j].Topic {
			return tps[i].Topic < tps[j].Topic
		}
		return tps[i].Partition < tps[j].Partition
	})
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "0\n%d\n", len(tps))
	for _, tp := range tps {
		fmt.Fprintf(&buf, "%s %d %d\n", tp.Topic, tp.Partition, offsets[tp])
	}
	return writeFileAtomic(fs, dir, name, buf.Bytes())
}

// writeFileAtomic replaces dir/name with data durably.
func writeFileAtomic(fs vfs.FS, dir, name string, data []byte) error {
	path := filepath.Join(dir, name)
	tmp := path + ".tmp"
	f, err := fs.Create(tmp)
	if err != nil {
		return fmt.Errorf("storage: write %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("storage: write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("storage: sync %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("storage: close %s: %w", path, err)
	}
	if err := fs.Rename(tmp, path); err != nil {
		return fmt.Errorf("storage: rename %s: %w", path, err)
	}
	if err := fs.SyncDir(dir); err != nil {
		return fmt.Errorf("storage: sync dir %s: %w", dir, err)
	}
	return nil
}

// readFile reads a whole file through fs.
func readFile(fs vfs.FS, path string) ([]byte, error) {
	f, err := fs.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// readCheckpoint parses a checkpoint file. A missing file is an empty
// checkpoint.
func readCheckpoint(fs vfs.FS, dir, name string) (map[TopicPartition]int64, error) {
	path := filepath.Join(dir, name)
	data, err := readFile(fs, path)
	if os.IsNotExist(err) {
		return map[TopicPartition]int64{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("storage: read %s: %w", path, err)
	}
	out, err := parseCheckpoint(data)
	if err != nil {
		return nil, fmt.Errorf("storage: parse %s: %w", path, err)
	}
	return out, nil
}

// parseCheckpoint parses an offset checkpoint: "<topic> <partition>
// <offset>" entries. A malformed file wraps errBadCheckpoint; callers
// treat it as missing.
func parseCheckpoint(data []byte) (map[TopicPartition]int64, error) {
	lines, err := parseCheckpointText(data, 3)
	if err != nil {
		return nil, err
	}
	out := make(map[TopicPartition]int64, len(lines))
	for i, f := range lines {
		p, err1 := strconv.ParseInt(f[1], 10, 32)
		o, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil || p < 0 {
			return nil, fmt.Errorf("%w: entry %d %q", errBadCheckpoint, i, strings.Join(f, " "))
		}
		out[TopicPartition{Topic: f[0], Partition: int32(p)}] = o
	}
	return out, nil
}

// parseCheckpointText parses the text format shared by the offset
// checkpoints and the leader epoch checkpoint: a version line "0", a count
// line n, then n lines of exactly fields space-separated fields, which it
// returns in order. Lines after the n entries are ignored. The count comes
// from the file, so it is checked against the data length before anything
// is allocated: each entry takes at least 2*fields-1 bytes. Errors wrap
// errBadCheckpoint.
func parseCheckpointText(data []byte, fields int) ([][]string, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	line := func() (string, bool) {
		if !sc.Scan() {
			return "", false
		}
		return sc.Text(), true
	}
	v, ok := line()
	if !ok || v != "0" {
		return nil, fmt.Errorf("%w: version %q", errBadCheckpoint, v)
	}
	c, ok := line()
	n, err := strconv.Atoi(c)
	if !ok || err != nil || n < 0 || n > len(data)/(2*fields-1) {
		return nil, fmt.Errorf("%w: count %q", errBadCheckpoint, c)
	}
	out := make([][]string, 0, n)
	for i := 0; i < n; i++ {
		s, ok := line()
		f := strings.Fields(s)
		if !ok || len(f) != fields {
			return nil, fmt.Errorf("%w: entry %d %q", errBadCheckpoint, i, s)
		}
		out = append(out, f)
	}
	return out, nil
}

// checkpoint writes the recovery point and log start offset checkpoints of
// every open log.
func (m *Manager) checkpoint() error {
	rp := map[TopicPartition]int64{}
	ls := map[TopicPartition]int64{}
	for _, l := range m.Logs() {
		rp[l.tp] = l.recoveryPoint.Load()
		ls[l.tp] = l.logStart.Load()
	}
	m.ckMu.Lock()
	defer m.ckMu.Unlock()
	if err := writeCheckpoint(m.fs, m.dir, recoveryPointFile, rp); err != nil {
		return err
	}
	return writeCheckpoint(m.fs, m.dir, logStartOffsetFile, ls)
}
