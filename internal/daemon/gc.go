package daemon

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
)

// DefaultGCPercent is the collector's target (GOGC) of every component unless the environment
// sets GOGC. A controller's heap is mostly its caches, which live as long as the process; Go's
// default of 100 lets garbage grow as large as all of them before a collection, which doubles
// the memory to reserve for each controller. At 33 the heap peaks a third above what is live,
// for more frequent collections while a controller converges, when it has CPU to spare: it
// waits on the API server's rate limit (docs/performance.md has both sides' figures).
const DefaultGCPercent = 33

// MemoryLimitShare is the part of the container's memory limit that a component gives the Go
// runtime as its soft limit (GOMEMLIMIT) unless the environment sets GOMEMLIMIT: near the
// limit the collector works harder instead of letting the kernel kill the process. The rest
// is for what the runtime does not count: thread stacks outside Go, the binary's pages.
const MemoryLimitShare = 0.9

// cgroupRoot is where the container's own cgroup is mounted.
const cgroupRoot = "/sys/fs/cgroup"

// tuneGC sets DefaultGCPercent unless lookup (os.LookupEnv) finds GOGC, and a soft memory
// limit of MemoryLimitShare of the cgroup's memory limit under root unless it finds
// GOMEMLIMIT: the runtime has applied those already, and an operator's setting wins. It
// returns the soft limit it set, 0 for none.
func tuneGC(lookup func(string) (string, bool), root string) int64 {
	if _, set := lookup("GOGC"); !set {
		debug.SetGCPercent(DefaultGCPercent)
	}
	if _, set := lookup("GOMEMLIMIT"); set {
		return 0
	}
	limit, ok := cgroupMemoryLimit(root)
	if !ok {
		return 0
	}
	soft := int64(float64(limit) * MemoryLimitShare)
	debug.SetMemoryLimit(soft)
	return soft
}

// cgroupMemoryLimit reads the memory limit of the cgroup mounted at root: cgroup v2's
// memory.max, else v1's memory/memory.limit_in_bytes. It reports false when there is none
// ("max", or v1's page-rounded largest value) or neither file can be read.
func cgroupMemoryLimit(root string) (int64, bool) {
	for _, file := range []string{"memory.max", filepath.Join("memory", "memory.limit_in_bytes")} {
		b, err := os.ReadFile(filepath.Join(root, file))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, false
		}
		v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || v <= 0 || v >= math.MaxInt64/2 { // "max", or v1's "no limit"
			return 0, false
		}
		return v, true
	}
	return 0, false
}
