package device

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// One agent at a time works a node's devices. A rollout starts the next agent beside the one
// it replaces (a surge), so that the devices change hands in the moment the old one stops
// rather than after its pod is gone and a new one is made; until then the next agent stands
// by. What they agree on is an exclusive lock on a file in the key directory, the host
// directory every agent of the node mounts: flock(2), which the kernel drops when its holder
// exits however it ends, so a crashed agent never keeps its successor waiting.

// holdFile is the lock file in the key directory. Its name does not end in the key suffix:
// it is no device's key.
const holdFile = "semaphore-wireguard.lock"

// holdPoll is how often a waiting agent tries the lock: the devices wait for it no longer.
const holdPoll = 20 * time.Millisecond

// HoldFile is the lock file in dir that the agent working the node's devices holds.
func HoldFile(dir string) string { return filepath.Join(dir, holdFile) }

// Hold takes the exclusive lock on dir's lock file, waiting while another process holds it,
// until ctx is done. waiting is called once if it has to wait. The returned release drops the
// lock; ending the process does too.
func Hold(ctx context.Context, dir string, waiting func()) (release func(), err error) {
	f, err := os.OpenFile(HoldFile(dir), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open the lock file: %w", err)
	}
	for told := false; ; told = true {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() { _ = f.Close() }, nil // closing the file drops the lock
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			_ = f.Close()
			return nil, fmt.Errorf("lock %s: %w", f.Name(), err)
		}
		if !told && waiting != nil {
			waiting()
		}
		select {
		case <-ctx.Done():
			_ = f.Close()
			return nil, ctx.Err()
		case <-time.After(holdPoll):
		}
	}
}
