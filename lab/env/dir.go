package env

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/kube-semaphore/semaphore/lab/layout"
)

// The lab directory: a lab takes it with its pid file, and keeps its runtime state there as
// long as it runs (the binaries and the logs stay).

// acquire makes dir the directory of a new lab: it refuses when a lab runs there, cleans up
// after one that died, and creates the pid file.
func acquire(dir string, out io.Writer) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	pid, rec, ok, err := layout.Running(dir)
	if err != nil {
		return err
	}
	if ok {
		return fmt.Errorf("a lab is already running in %s (pid %d): `bash ci/lab status` shows it, `make lab-down` (bash ci/lab down) stops it", dir, pid)
	}
	if pid != 0 || rec != nil {
		fmt.Fprintf(out, "lab: cleaning up after a lab that did not tear down (pid %d)\n", pid)
		if err := cleanUp(dir, rec, out); err != nil {
			return err
		}
	}
	f, err := os.OpenFile(filepath.Join(dir, layout.PIDFile), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("another lab is starting in %s", dir)
		}
		return err
	}
	_, err = fmt.Fprintln(f, os.Getpid())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// runtimePaths are what only a running lab needs, in its directory. The binaries and the logs
// are not among them: they stay.
var runtimePaths = append([]string{layout.KubeconfigFile, workstationKubeconfig, layout.GuideDir, "clusters", "coredns", "nodes", "pods", "prometheus", "tmp", layout.RecordFile, layout.RecordFile + ".tmp", layout.PIDFile}, egressSockets()...)

// egressSockets are the egress proxies' sockets, one per cluster.
func egressSockets() []string {
	var out []string
	for _, name := range layout.ClusterNames() {
		out = append(out, egressSocket(name))
	}
	return out
}

// removeRuntimeState removes the runtime paths.
func removeRuntimeState(dir string) error {
	var errs []error
	for _, p := range runtimePaths {
		errs = append(errs, os.RemoveAll(filepath.Join(dir, p)))
	}
	return errors.Join(errs...)
}
