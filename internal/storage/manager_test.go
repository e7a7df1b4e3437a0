package storage

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"samsa/internal/vfs"
)

// gateFS blocks MkdirAll of paths containing block until release is
// closed, and reports on entered when one is blocked.
type gateFS struct {
	vfs.FS
	block   string
	entered chan struct{}
	release chan struct{}
}

func (g *gateFS) MkdirAll(dir string, perm os.FileMode) error {
	if g.block != "" && strings.Contains(dir, g.block) {
		g.entered <- struct{}{}
		<-g.release
	}
	return g.FS.MkdirAll(dir, perm)
}

// While one Create waits on its directory IO, Log and Logs answer and
// other logs stay usable.
func TestCreateDoesNoIOUnderManagerLock(t *testing.T) {
	g := &gateFS{FS: vfs.NewMemFS(), block: "slow-0", entered: make(chan struct{}), release: make(chan struct{})}
	m := openManager(t, g, "/data", nil)
	defer m.Close()
	fast, err := m.Create(testTP, [16]byte{1}, smallConfig())
	if err != nil {
		t.Fatal(err)
	}
	slowTP := TopicPartition{Topic: "slow", Partition: 0}
	var wg sync.WaitGroup
	var slow *Log
	var slowErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		slow, slowErr = m.Create(slowTP, [16]byte{2}, smallConfig())
	}()
	<-g.entered // the slow Create is inside its IO

	answered := make(chan []*Log)
	go func() {
		_ = m.Log(testTP)
		answered <- m.Logs()
	}()
	select {
	case logs := <-answered:
		if len(logs) != 1 || logs[0] != fast {
			t.Errorf("Logs during Create = %v, want only %v", logs, fast.tp)
		}
	case <-time.After(5 * time.Second):
		close(g.release)
		wg.Wait()
		<-answered
		t.Fatal("Logs blocked behind a Create's IO")
	}
	if got := m.Log(slowTP); got != nil {
		t.Errorf("Log(%v) visible before its Create finished", slowTP)
	}
	if _, err := fast.Append(makeBatch(t, 1, 2, 0), 0, false, 0); err != nil {
		t.Errorf("Append during Create: %v", err)
	}

	close(g.release)
	wg.Wait()
	if slowErr != nil {
		t.Fatal(slowErr)
	}
	if m.Log(slowTP) != slow || len(m.Logs()) != 2 {
		t.Fatalf("after Create: Log = %v, %d logs", m.Log(slowTP), len(m.Logs()))
	}
	// Creating it again returns the same log.
	again, err := m.Create(slowTP, [16]byte{2}, smallConfig())
	if err != nil || again != slow {
		t.Fatalf("second Create = %p, %v; want %p", again, err, slow)
	}
}

// Concurrent Creates of one partition all get the one log.
func TestConcurrentCreateOfOnePartitionReturnsOneLog(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		m := openManager(t, fs, dir, nil)
		defer m.Close()
		const n = 8
		logs := make([]*Log, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				logs[i], errs[i] = m.Create(testTP, [16]byte{3}, smallConfig())
			}()
		}
		wg.Wait()
		for i := range n {
			if errs[i] != nil || logs[i] != logs[0] {
				t.Fatalf("Create %d = %p, %v; Create 0 = %p", i, logs[i], errs[i], logs[0])
			}
		}
		want := appendN(t, logs[0], 0, 5, 0)
		checkLog(t, m.Log(testTP), want)
	})
}

// A Create whose IO overlaps Close fails with ErrClosed and registers
// nothing.
func TestCreateRacingCloseFailsClosed(t *testing.T) {
	g := &gateFS{FS: vfs.NewMemFS(), block: "late-0", entered: make(chan struct{}), release: make(chan struct{})}
	m := openManager(t, g, "/data", nil)
	var wg sync.WaitGroup
	var err error
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, err = m.Create(TopicPartition{Topic: "late", Partition: 0}, [16]byte{}, smallConfig())
	}()
	<-g.entered
	closed := make(chan error)
	go func() { closed <- m.Close() }()
	waitFor(t, 5*time.Second, "Close to start", m.isClosed)
	close(g.release)
	wg.Wait()
	if cerr := <-closed; cerr != nil {
		t.Fatal(cerr)
	}
	if !errors.Is(err, ErrClosed) {
		t.Fatalf("Create racing Close: %v, want ErrClosed", err)
	}
	if len(m.Logs()) != 0 {
		t.Fatalf("%d logs registered after Close", len(m.Logs()))
	}
}

// A log found on disk without partition.metadata (the broker was killed
// between creating the partition's directory and writing the file) gets
// the topic id of the next Create, durably; a Create with another topic
// id than the one on disk fails with ErrTopicIDMismatch and changes
// nothing.
func TestCreateOfExistingLogChecksAndRepairsTopicID(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		id, other := [16]byte{7}, [16]byte{8}
		m := openManager(t, fs, dir, nil)
		l, err := m.Create(testTP, id, smallConfig())
		if err != nil {
			t.Fatal(err)
		}
		want := appendN(t, l, 0, 3, 0)
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		if err := fs.Remove(filepath.Join(dir, partitionDir(testTP), metadataFile)); err != nil {
			t.Fatal(err)
		}

		m = openManager(t, fs, dir, nil)
		if got := m.Log(testTP).TopicID(); got != ([16]byte{}) {
			t.Fatalf("reopened without partition.metadata: topic id %x, want none", got)
		}
		if _, err := m.Create(testTP, id, smallConfig()); err != nil {
			t.Fatalf("Create with the topic id: %v", err)
		}
		if got := m.Log(testTP).TopicID(); got != id {
			t.Fatalf("after Create: topic id %x, want %x", got, id)
		}
		if _, err := m.Create(testTP, other, smallConfig()); !errors.Is(err, ErrTopicIDMismatch) {
			t.Fatalf("Create with another topic id: %v, want ErrTopicIDMismatch", err)
		}
		checkLog(t, m.Log(testTP), want)
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}

		m = openManager(t, fs, dir, nil)
		defer m.Close()
		if got := m.Log(testTP).TopicID(); got != id {
			t.Fatalf("reopened: topic id %x, want %x (partition.metadata written again)", got, id)
		}
		checkLog(t, m.Log(testTP), want)
	})
}
