package daemon

import (
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

// noEnv is an environment without GOGC or GOMEMLIMIT.
func noEnv(string) (string, bool) { return "", false }

// Without GOGC a component collects at DefaultGCPercent; with it, at what GOGC says.
func TestDefaultGCPercentUnlessGOGCIsSet(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	tuneGC(noEnv, t.TempDir())
	if got := debug.SetGCPercent(77); got != DefaultGCPercent {
		t.Errorf("without GOGC: GC percent %d, want %d", got, DefaultGCPercent)
	}
	// The runtime applied GOGC=77 at start; tuneGC leaves it.
	tuneGC(func(name string) (string, bool) { return "77", name == "GOGC" }, t.TempDir())
	if got := debug.SetGCPercent(100); got != 77 {
		t.Errorf("with GOGC=77: GC percent %d, want 77", got)
	}
}

// A container's memory limit, in cgroup v2 or v1, becomes a soft limit of MemoryLimitShare of
// it; no limit, or GOMEMLIMIT set by the operator, leaves the runtime's as it is.
func TestSoftMemoryLimitFromTheCgroup(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	const limit = 256 << 20
	for _, c := range []struct {
		name  string
		files map[string]string
		env   func(string) (string, bool)
		want  int64 // 0: the runtime's limit is left as it was
	}{
		{"v2", map[string]string{"memory.max": "268435456\n"}, noEnv, limit * 9 / 10},
		{"v2 without a limit", map[string]string{"memory.max": "max\n"}, noEnv, 0},
		{"v1", map[string]string{"memory/memory.limit_in_bytes": "268435456\n"}, noEnv, limit * 9 / 10},
		{"v1 without a limit", map[string]string{"memory/memory.limit_in_bytes": "9223372036854771712\n"}, noEnv, 0},
		{"no cgroup files", nil, noEnv, 0},
		{"GOMEMLIMIT set", map[string]string{"memory.max": "268435456\n"},
			func(name string) (string, bool) { return "100MiB", name == "GOMEMLIMIT" }, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			for name, content := range c.files {
				path := filepath.Join(root, name)
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			const before = 1 << 40
			debug.SetMemoryLimit(before)
			set := tuneGC(c.env, root)
			got := debug.SetMemoryLimit(-1) // reads it
			want := c.want
			if want == 0 {
				want = before
			}
			if set != c.want || got != want {
				t.Errorf("tuneGC returned %d and the runtime's limit is %d, want %d and %d", set, got, c.want, want)
			}
		})
	}
}
