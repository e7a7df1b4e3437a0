package chaos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sys/unix"
)

// The tests in this file are TESTPLAN D-05 and D-06 with several log dirs
// (KIP-112): broker 2 gets a second log dir on a file system of its own,
// leads every partition of the topic (two in each dir), and that file
// system breaks for real under the safe producer's load (full, I/O
// errors, remounted read-only by the kernel). The broker keeps running
// and serving its first dir; the failed dir's partitions answer
// KAFKA_STORAGE_ERROR there, their leadership moves to in-sync replicas
// on the other brokers and broker 2 leaves their ISRs. With the file
// system repaired, broker 2 restarts, catches up and rejoins every ISR.
// Nothing acknowledged is lost, duplicated or moved. They need root (mount,
// losetup) and are skipped without it.

// oneDirFault is how one file system breaks and is repaired.
type oneDirFault struct {
	// mount makes dir (an empty directory) the mount point of a new
	// file system, unmounted in a t.Cleanup even when the test fails.
	mount func(t *testing.T, dir string)
	// fail breaks the file system mounted at dir.
	fail func(t *testing.T, dir string)
	// repair makes it usable again; broker 2 is stopped.
	repair func(t *testing.T, dir string)
	// errTexts are the errors the broker's log may name (one of them).
	errTexts []string
}

// TestD05FullDiskTakesOneOfTwoLogDirsOffline: the second dir is a 64 MiB
// tmpfs, filled by a file while the load runs.
func TestD05FullDiskTakesOneOfTwoLogDirsOffline(t *testing.T) {
	filler := func(dir string) string { return filepath.Join(dir, "filler") }
	runOneDirFault(t, "d05jbod", oneDirFault{
		mount: func(t *testing.T, dir string) {
			mustRun(t, "mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", dir)
			t.Cleanup(func() { tryRun(t, "umount", "-l", dir) })
		},
		fail:     func(t *testing.T, dir string) { fill(t, filler(dir)) },
		repair:   func(t *testing.T, dir string) { os.Remove(filler(dir)) },
		errTexts: []string{"no space left on device"},
	})
}

// TestD06IOErrorTakesOneOfTwoLogDirsOffline: the second dir is an ext4
// file system on a loop device; the FS_IOC_SHUTDOWN ioctl (flag
// EXT4_GOING_FLAGS_NOLOGFLUSH) shuts it down, so that every later
// operation on it fails with EIO from the kernel, as on a disk that died.
// Repaired: unmounted, checked (e2fsck) and mounted again; what the
// shutdown kept from reaching the disk is gone and the broker's recovery
// and the followers' catch-up restore it.
func TestD06IOErrorTakesOneOfTwoLogDirsOffline(t *testing.T) {
	var dev string
	runOneDirFault(t, "d06eio", oneDirFault{
		mount: func(t *testing.T, dir string) { dev = mountLoopExt4(t, dir, "") },
		fail: func(t *testing.T, dir string) {
			f, err := os.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			const fsIOCShutdown = 0x8004587d // _IOR('X', 125, __u32)
			const ext4GoingFlagsNoLogFlush = 2
			if err := unix.IoctlSetPointerInt(int(f.Fd()), fsIOCShutdown, ext4GoingFlagsNoLogFlush); err != nil {
				t.Fatalf("FS_IOC_SHUTDOWN %s: %v", dir, err)
			}
		},
		repair:   func(t *testing.T, dir string) { remountLoop(t, dev, dir, "") },
		errTexts: []string{"input/output error"},
	})
}

// TestD06ReadOnlyRemountTakesOneOfTwoLogDirsOffline: the second dir is an
// ext4 file system mounted with errors=remount-ro on a loop device; an
// ext4 error makes the kernel remount it read-only under the broker,
// whose files stay open for writing, and every later write or fsync
// there fails with EROFS. The error is forced with ext4's abort mount
// option (`mount -o remount,abort`, the kernel's "Abort forced by user"),
// because `mount -o remount,ro` refuses while files are open for writing,
// and on this kernel a read-only loop device (`blockdev --setro`) only
// warns ("Trying to write to read-only block-device") and lets the
// writes through.
func TestD06ReadOnlyRemountTakesOneOfTwoLogDirsOffline(t *testing.T) {
	var dev string
	runOneDirFault(t, "d06erofs", oneDirFault{
		mount: func(t *testing.T, dir string) { dev = mountLoopExt4(t, dir, "errors=remount-ro") },
		fail: func(t *testing.T, dir string) {
			mustRun(t, "mount", "-o", "remount,abort", dir)
			// The kernel lists a file system it remounted read-only
			// after an error as emergency_ro (6.x) or ro.
			if opts := strings.Split(mountOptions(t, dir), ","); !slices.Contains(opts, "ro") && !slices.Contains(opts, "emergency_ro") {
				t.Fatalf("%s not remounted read-only by the kernel: %v", dir, opts)
			}
			if err := os.WriteFile(filepath.Join(dir, "probe"), []byte("x"), 0o644); !errors.Is(err, syscall.EROFS) {
				t.Fatalf("a write in %s after the remount: %v, want EROFS", dir, err)
			}
		},
		repair: func(t *testing.T, dir string) { remountLoop(t, dev, dir, "errors=remount-ro") },
		// An fsync under way when the journal aborts fails with EIO;
		// writes after the remount fail with EROFS. Whichever the
		// broker meets first takes the dir offline.
		errTexts: []string{"read-only file system", "input/output error"},
	})
}

func runOneDirFault(t *testing.T, topic string, f oneDirFault) {
	if os.Geteuid() != 0 {
		t.Skip("mounts a file system: run as root")
	}
	const partitions = 4
	c := startCluster(t)
	victim := c.brokers[2]
	victim.kill()
	second := filepath.Join(victim.dir, "data2")
	if err := os.Mkdir(second, 0o755); err != nil {
		t.Fatal(err)
	}
	f.mount(t, second)
	t.Cleanup(victim.kill) // before the unmounts (cleanups run last first)
	for i, a := range victim.args {
		if strings.HasPrefix(a, "log.dirs=") {
			victim.args[i] = a + "," + second
		}
	}
	c.restart(victim)
	c.createTopic(topic, partitions)
	c.leadAll(topic, partitions, victim.id)
	first := filepath.Join(victim.dir, "data")
	// NB: etcd shows the topic with a full ISR as soon as it is created;
	// broker 2 hosts its replicas a moment later.
	var placed map[string][]int32
	waitFor(t, 30*time.Second, func() error {
		placed = c.logDirsOf(victim.id, topic)
		if len(placed[first])+len(placed[second]) != partitions {
			return fmt.Errorf("broker 2 hosts %v", placed)
		}
		return nil
	})
	if len(placed[first]) != 2 || len(placed[second]) != 2 {
		t.Fatalf("broker 2 placed %s's partitions %v, want two in %s and two in %s", topic, placed, first, second)
	}

	w := startWorkload(t, c, topic, partitions)
	for p := range int32(partitions) {
		w.waitAcks(p, 50, 30*time.Second)
	}
	failedAt := time.Now()
	f.fail(t, second)
	waitFor(t, 60*time.Second, func() error {
		if err := victim.exited(); err != nil {
			return fmt.Errorf("broker 2 exited: %w", err)
		}
		for _, p := range placed[second] {
			st, err := c.state(topic, p)
			if err != nil {
				return err
			}
			if st.Leader < 0 || st.Leader == victim.id || st.inISR(victim.id) {
				return fmt.Errorf("%s-%d: %s", topic, p, st)
			}
		}
		return nil
	})
	moved := time.Since(failedAt)
	for _, p := range placed[first] {
		if st := c.mustState(topic, p); st.Leader != victim.id || !st.inISR(victim.id) {
			t.Errorf("%s-%d of broker 2's healthy dir: %s, want broker 2 leading and in the ISR", topic, p, st)
		}
	}
	for p := range int32(partitions) {
		w.waitAcks(p, 50, 30*time.Second)
	}
	if victim.exited() != nil {
		t.Fatalf("broker 2 exited with one log dir healthy")
	}
	// Broker 2 answers for the failed dir with KAFKA_STORAGE_ERROR.
	dirs := c.describeLogDirs(victim.id)
	if err := dirs[second].Err; !errors.Is(err, kerr.KafkaStorageError) {
		t.Errorf("DescribeLogDirs of the failed dir: %v, want KAFKA_STORAGE_ERROR", err)
	}
	if d := dirs[first]; d.Err != nil || d.Size() <= 0 {
		t.Errorf("DescribeLogDirs of the healthy dir: err %v, size %d", d.Err, d.Size())
	}
	probe := "probe-" + topic
	w.addProbe(placed[second][0], -1, probe, false)
	if code, err := produceDirect(victim.addr(), topic, placed[second][0], probe); err != nil || code != kerr.KafkaStorageError.Code {
		t.Errorf("produce to %s-%d at broker 2: %v, %v; want KAFKA_STORAGE_ERROR", topic, placed[second][0], kerr.ErrorForCode(code), err)
	}
	if log := victim.log(); !strings.Contains(log, "log dir offline") ||
		!slices.ContainsFunc(f.errTexts, func(e string) bool { return strings.Contains(log, e) }) {
		t.Errorf("broker 2's log does not say a log dir went offline with one of %q", f.errTexts)
	}
	t.Logf("%s: leadership of the failed dir's partitions moved and broker 2 left their ISRs %s after the fault",
		topic, moved.Round(time.Millisecond))

	victim.kill()
	f.repair(t, second)
	c.restart(victim)
	c.waitFullISR(topic, partitions)
	for p := range int32(partitions) {
		w.waitAcks(p, 50, 30*time.Second)
	}
	w.stop(30 * time.Second)
	r := w.check(c)
	t.Logf("%s: %v", topic, r)
}

// leadAll makes broker id the preferred replica and the leader of every
// partition of topic.
func (c *testCluster) leadAll(topic string, partitions int32, id int32) {
	c.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs()...))
	if err != nil {
		c.t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var req kadm.AlterPartitionAssignmentsReq
	for p := range partitions {
		order := []int32{id}
		for b := range int32(numBrokers) {
			if b != id {
				order = append(order, b)
			}
		}
		req.Assign(topic, p, order)
	}
	resps, err := adm.AlterPartitionAssignments(ctx, req)
	if err == nil {
		err = resps.Error()
	}
	if err != nil {
		c.t.Fatalf("reorder the replicas of %s: %v", topic, err)
	}
	waitFor(c.t, 30*time.Second, func() error {
		set := kadm.TopicsSet{}
		for p := range partitions {
			if st, err := c.state(topic, p); err != nil || st.Leader != id {
				set.Add(topic, p)
			}
		}
		if len(set) == 0 {
			return nil
		}
		if _, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, set); err != nil {
			return err
		}
		return fmt.Errorf("broker %d does not lead %v yet", id, set)
	})
}

// logDirsOf returns, per log dir of broker id, the partitions of topic in
// it (DescribeLogDirs).
func (c *testCluster) logDirsOf(id int32, topic string) map[string][]int32 {
	c.t.Helper()
	out := map[string][]int32{}
	for dir, d := range c.describeLogDirs(id) {
		for _, p := range d.Topics[topic] {
			out[dir] = append(out[dir], p.Partition)
		}
		slices.Sort(out[dir])
	}
	return out
}

// describeLogDirs asks broker id for its log dirs.
func (c *testCluster) describeLogDirs(id int32) kadm.DescribedLogDirs {
	c.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.brokers[id].addr()))
	if err != nil {
		c.t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	d, err := kadm.NewClient(cl).DescribeBrokerLogDirs(ctx, id, nil)
	if err != nil {
		c.t.Fatalf("describe the log dirs of broker %d: %v", id, err)
	}
	return d
}

// mountLoopExt4 makes a 256 MiB ext4 file system in an image file, on a
// loop device, mounted at dir with opts (empty: defaults), and returns
// the device. Everything is undone in a t.Cleanup, also on failure.
func mountLoopExt4(t *testing.T, dir, opts string) string {
	t.Helper()
	img := filepath.Join(t.TempDir(), "disk.img")
	mustRun(t, "truncate", "-s", "256M", img)
	mustRun(t, "mkfs.ext4", "-q", "-F", img)
	out, err := exec.Command("losetup", "-f", "--show", img).CombinedOutput()
	if err != nil {
		t.Skipf("losetup: %v: %s", err, out)
	}
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() {
		tryRun(t, "umount", "-l", dir)
		tryRun(t, "losetup", "-d", dev)
	})
	args := []string{dev, dir}
	if opts != "" {
		args = append([]string{"-o", opts}, args...)
	}
	mustRun(t, "mount", args...)
	return dev
}

// remountLoop unmounts dir, checks dev's file system and mounts it at dir
// again with opts.
func remountLoop(t *testing.T, dev, dir, opts string) {
	t.Helper()
	mustRun(t, "umount", dir)
	// e2fsck exits 1 when it corrected errors.
	if out, err := exec.Command("e2fsck", "-f", "-y", dev).CombinedOutput(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() > 1 {
			t.Fatalf("e2fsck %s: %v: %s", dev, err, out)
		}
	}
	args := []string{dev, dir}
	if opts != "" {
		args = append([]string{"-o", opts}, args...)
	}
	mustRun(t, "mount", args...)
}

// mountOptions returns the options /proc/mounts lists for dir.
func mountOptions(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile("/proc/mounts")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 4 && f[1] == dir {
			return f[3]
		}
	}
	return ""
}

func mustRun(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
}

func tryRun(t *testing.T, name string, args ...string) {
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Logf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
}
