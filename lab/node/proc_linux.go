//go:build linux

package node

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
)

// proc is one of the node's daemons.
type proc struct {
	name string
	log  string
	cmd  *exec.Cmd
	done chan struct{}
	err  error // how it exited, set before done is closed
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// failure is p's exit and the end of its log.
func (p *proc) failure() error {
	err := p.err
	if err == nil {
		err = errors.New("exit status 0")
	}
	return fmt.Errorf("%s exited (%w); the end of %s:\n%s", p.name, err, p.log, logTail(p.log, 15))
}

// start runs args as daemon name of the node, in its daemons cgroup (joined by the shell that
// execs args, so that nothing it starts escapes), logging to LogDir/<name>-<Name>.log. It
// leads its own process group (a Ctrl-C in the lab's terminal reaches the lab, which stops the
// node) and is killed when the caller dies.
func (n *Node) start(name string, procsFiles []string, args ...string) (*proc, error) {
	logPath := filepath.Join(n.cfg.LogDir, name+"-"+n.cfg.Name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close() // the process has its own descriptor
	var join []string
	for _, f := range procsFiles {
		join = append(join, "echo $$ > "+shellQuote(f))
	}
	script := "set -e\n" + strings.Join(join, "\n") + "\nexec \"$@\""
	cmd := exec.Command("sh", append([]string{"-c", script, "sh"}, args...)...)
	cmd.Dir = "/"
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH") + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME=/root",
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	p := &proc{name: name, log: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	n.procs = append(n.procs, p)
	return p, nil
}

// waitContainerd waits until containerd answers on socket with its CRI plugin loaded.
func waitContainerd(ctx context.Context, p *proc, socket string) error {
	for {
		if p.exited() {
			return p.failure()
		}
		if c, err := net.DialTimeout("unix", socket, time.Second); err == nil {
			c.Close()
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("containerd does not answer on %s: %w; the end of %s:\n%s", socket, ctx.Err(), p.log, logTail(p.log, 15))
		case <-time.After(50 * time.Millisecond):
		}
	}
	// containerd serves without a plugin that failed to load; kubelet would only say that
	// the CRI service is unknown.
	if log, err := os.ReadFile(p.log); err == nil {
		for _, line := range strings.Split(string(log), "\n") {
			if strings.Contains(line, "failed to load plugin") && strings.Contains(line, "io.containerd.grpc.v1.cri") {
				return fmt.Errorf("containerd has no CRI plugin: %s", line)
			}
		}
	}
	return nil
}

// waitHTTP waits until url, inside network namespace netns, answers (with 200 when ok is
// set), while p runs.
func waitHTTP(ctx context.Context, netns string, p *proc, url string, ok bool) error {
	client := testbed.HTTPClientInNetns(netns)
	var last string
	for {
		if p.exited() {
			return p.failure()
		}
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if !ok || resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s does not answer on %s (%s): %w; the end of %s:\n%s", p.name, url, last, ctx.Err(), p.log, logTail(p.log, 15))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// logTail is the last n lines of the file at path.
func logTail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "(no log)"
		}
		return err.Error()
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// procState is process pid's state (R, S, Z...), "" when there is no such process.
func procState(pid int) string {
	s, err := testbed.ReadProcessStat(pid)
	if err != nil {
		return ""
	}
	return s.State
}
