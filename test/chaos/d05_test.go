package chaos

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestD05DiskFullTakesBrokerOut is TESTPLAN D-05 with a real full disk:
// broker 2's log dir is a 64 MiB tmpfs. During the safe producer's load
// a file fills that tmpfs, so broker 2's next write fails with ENOSPC.
// The broker takes its log dir offline, shuts down (the controller moves
// its leaderships to in-sync replicas on the other brokers) and exits
// with status 1; the load goes on against brokers 0 and 1. With the file
// removed, broker 2 starts again, recovers its logs and rejoins every
// ISR. Nothing acknowledged is lost, duplicated or moved.
//
// It needs root to mount the tmpfs and is skipped without it.
func TestD05DiskFullTakesBrokerOut(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("D-05 mounts a tmpfs: run as root")
	}
	const (
		topic      = "d03"
		partitions = 3
	)
	c := startCluster(t)
	c.createTopic(topic, partitions)
	w := startWorkload(t, c, topic, partitions)
	w.waitAcks(0, 50, 30*time.Second)

	// Move broker 2's log dir onto a small tmpfs.
	victim := c.brokers[2]
	victim.kill()
	data := filepath.Join(victim.dir, "data")
	old := data + ".disk"
	if err := os.Rename(data, old); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", data).CombinedOutput(); err != nil {
		t.Skipf("mount a tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() {
		victim.kill()
		if out, err := exec.Command("umount", "-l", data).CombinedOutput(); err != nil {
			t.Logf("umount %s: %v: %s", data, err, out)
		}
	})
	if out, err := exec.Command("cp", "-a", old+"/.", data).CombinedOutput(); err != nil {
		t.Fatalf("copy the log dir onto the tmpfs: %v: %s", err, out)
	}
	c.restart(victim)
	c.waitFullISR(topic, partitions)
	w.waitAcks(0, 50, 30*time.Second)

	// Fill the tmpfs.
	filler := filepath.Join(data, "filler")
	filledAt := time.Now()
	fill(t, filler)
	state, ok := victim.waitExit(60 * time.Second)
	if !ok {
		t.Fatalf("broker 2 still running 60 s after its log dir filled up")
	}
	exitAfter := time.Since(filledAt)
	if state.ExitCode() != 1 {
		t.Errorf("broker 2 exited with %v, want status 1", state)
	}
	if log := victim.log(); !strings.Contains(log, "every log dir is offline") || !strings.Contains(log, "no space left on device") {
		t.Errorf("broker 2's log does not say its log dir went offline for lack of space")
	}
	// The other brokers lead everything and take acks=all writes.
	moved := time.Now()
	waitFor(t, 30*time.Second, func() error {
		for p := range int32(partitions) {
			st, err := c.state(topic, p)
			if err != nil {
				return err
			}
			if st.Leader < 0 || st.Leader == victim.id || st.inISR(victim.id) {
				return errors.New(topic + ": " + st.String())
			}
		}
		return nil
	})
	for p := range int32(partitions) {
		w.waitAcks(p, 50, 30*time.Second)
	}
	t.Logf("D-05: broker 2 exited %s after its disk filled; ISRs without it %s later",
		exitAfter.Round(time.Millisecond), time.Since(moved).Round(time.Millisecond))

	// The disk fixed, broker 2 comes back.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	c.restart(victim)
	c.waitFullISR(topic, partitions)
	w.waitAcks(0, 50, 30*time.Second)
	w.stop(30 * time.Second)
	r := w.check(c)
	t.Logf("D-05: %v", r)
}

// fill writes path until its file system has no space left.
func fill(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 1<<20)
	for {
		if _, err := f.Write(chunk); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return
			}
			t.Fatal(err)
		}
	}
}
