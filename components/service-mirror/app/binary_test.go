package app_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kube-semaphore/semaphore/components/internal/remote"
	"github.com/kube-semaphore/semaphore/components/internal/testenv"
)

// rsBuildBinary builds the real semaphore-service-mirror binary into a temporary directory.
func rsBuildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "semaphore-service-mirror")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/kube-semaphore/semaphore/components/service-mirror")
	cmd.Dir = testenv.RepoRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

type rsRun struct {
	code           int
	stdout, stderr string
}

// rsExec runs bin with args and exactly the environment env plus PATH and HOME.
func rsExec(t *testing.T, bin string, env []string, args ...string) rsRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}, env...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%s did not exit within 30s; stderr:\n%s", bin, stderr.String())
	}
	r := rsRun{stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return r
}

func TestBadConfiguration(t *testing.T) {
	bin := rsBuildBinary(t)

	// Remote kubeconfig fixtures: none at all, and one that is not YAML a kubeconfig can be.
	noRemotes := t.TempDir()
	garbageRemotes := t.TempDir()
	garbage := remote.KubeconfigPath(garbageRemotes, "aws")
	if err := os.MkdirAll(filepath.Dir(garbage), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(garbage, []byte("not: [valid"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Everything a start needs short of the case's mistake; leader election is left on (the
	// default) with its namespace from POD_NAMESPACE, as in a pod.
	valid := func(extra ...string) []string {
		return append([]string{
			"SEMAPHORE_LOCAL_CLUSTER=local",
			"SEMAPHORE_LOCAL_KUBECONFIG=" + local.DirectKubeconfig,
			"SEMAPHORE_ADMIN_ADDR=127.0.0.1:0",
			"POD_NAMESPACE=semaphore",
		}, extra...)
	}

	for _, tc := range []struct {
		name string
		env  []string
		// want are the strings the one line on stderr must contain.
		want []string
	}{
		{
			name: "missing local cluster",
			env:  nil,
			want: []string{"SEMAPHORE_LOCAL_CLUSTER"},
		},
		{
			name: "remote name not a DNS label",
			env:  valid("SEMAPHORE_REMOTES=gcp,AWS_1"),
			want: []string{"SEMAPHORE_REMOTES", `"AWS_1"`},
		},
		{
			name: "remote kubeconfig missing",
			env:  valid("SEMAPHORE_REMOTES=aws", "SEMAPHORE_REMOTES_DIR="+noRemotes),
			want: []string{remote.KubeconfigPath(noRemotes, "aws"), "aws"},
		},
		{
			name: "remote kubeconfig not a kubeconfig",
			env:  valid("SEMAPHORE_REMOTES=aws", "SEMAPHORE_REMOTES_DIR="+garbageRemotes),
			want: []string{garbage, "aws"},
		},
		{
			name: "local kubeconfig not a kubeconfig",
			env:  append(valid(), "SEMAPHORE_LOCAL_KUBECONFIG="+garbage),
			want: []string{"SEMAPHORE_LOCAL_KUBECONFIG", garbage},
		},
		{
			name: "bad label selector",
			env:  valid("SEMAPHORE_MIRROR_LABEL_SELECTOR=a b c"),
			want: []string{"SEMAPHORE_MIRROR_LABEL_SELECTOR"},
		},
		{
			name: "client QPS not a number",
			env:  valid("SEMAPHORE_CLIENT_QPS=abc"),
			want: []string{"SEMAPHORE_CLIENT_QPS", "abc"},
		},
		{
			name: "leader election without a namespace",
			env:  []string{"SEMAPHORE_LOCAL_CLUSTER=local", "SEMAPHORE_LOCAL_KUBECONFIG=" + local.DirectKubeconfig},
			want: []string{"SEMAPHORE_LEADER_ELECT_NAMESPACE", "POD_NAMESPACE"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rsExec(t, bin, tc.env)
			if r.code == 0 {
				t.Errorf("exit code 0, want non-zero")
			}
			lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
			if len(lines) != 1 || lines[0] == "" {
				t.Fatalf("stderr has %d lines, want exactly one:\n%s", len(lines), r.stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(lines[0], w) {
					t.Errorf("stderr %q does not name %q", lines[0], w)
				}
			}
			if strings.Contains(r.stderr, "panic") || strings.Contains(r.stderr, "goroutine ") {
				t.Errorf("stderr looks like a crash: %s", r.stderr)
			}
			t.Logf("exit %d: %s", r.code, lines[0])
		})
	}

	t.Run("help", func(t *testing.T) {
		r := rsExec(t, bin, nil, "-h")
		if r.code != 0 {
			t.Errorf("-h exit code %d, want 0; stderr: %s", r.code, r.stderr)
		}
		for _, v := range []string{"SEMAPHORE_MIRROR_NAMESPACE", "SEMAPHORE_LOCAL_CLUSTER", "SEMAPHORE_REMOTES"} {
			if !strings.Contains(r.stdout, v) {
				t.Errorf("-h output does not list %s:\n%s", v, r.stdout)
			}
		}
		if r.stderr != "" {
			t.Errorf("-h wrote to stderr: %s", r.stderr)
		}
	})
}
