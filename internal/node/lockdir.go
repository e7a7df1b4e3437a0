package node

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// lockFileName is the lock file in each log dir; Kafka's LogManager uses
// the same name.
const lockFileName = ".lock"

// errLogDirLocked is returned by Start when another process holds the
// lock of a log dir.
var errLogDirLocked = errors.New("cli: log dir in use")

// dirLock is an exclusive flock(2) on a log dir's .lock file, held for the
// life of the node. The file holds the holder's pid, so that a second
// broker on the same dir can say who has it.
type dirLock struct{ f *os.File }

// lockLogDir takes the lock of dir without waiting: a dir that another
// process (or another node of this one) holds fails at once, naming the
// dir and the holder's pid.
func lockLogDir(dir string) (*dirLock, error) {
	path := filepath.Join(dir, lockFileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock log dir: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			holder := "unknown pid"
			if b, rerr := os.ReadFile(path); rerr == nil {
				if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); perr == nil {
					holder = "pid " + strconv.Itoa(pid)
				}
			}
			return nil, fmt.Errorf("%w: %s is locked by another samsa broker (%s; lock file %s); stop it or give this one other log.dirs",
				errLogDirLocked, dir, holder, path)
		}
		return nil, fmt.Errorf("lock log dir %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &dirLock{f: f}, nil
}

// unlock releases the lock. It is safe on a nil lock.
func (l *dirLock) unlock() error {
	if l == nil {
		return nil
	}
	return l.f.Close()
}
