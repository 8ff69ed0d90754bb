package conformance

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
	"github.com/kube-semaphore/semaphore/internal/tooling/images"
)

// A dynamically linked program of this machine comes with its loader and its libraries, at
// the paths where the loader looks for them, as regular files.
func TestAProgramComesWithItsLoaderAndLibraries(t *testing.T) {
	files, err := withLibraries("/", map[string]string{"/bin/sh": "/bin/sh"})
	if err != nil {
		t.Fatal(err)
	}
	byPath := map[string]images.File{}
	for _, f := range files {
		byPath[f.Path] = f
	}
	interp, _, err := dynamicDeps(byPath["/bin/sh"].Data)
	if err != nil {
		t.Fatal(err)
	}
	if interp == "" {
		t.Skip("/bin/sh is statically linked here")
	}
	for p, mode := range map[string]os.FileMode{"/bin/sh": 0o755, interp: 0o755} {
		if f, ok := byPath[p]; !ok || f.Mode != mode || len(f.Data) == 0 {
			t.Errorf("%s: %v (mode %v), want mode %v", p, ok, f.Mode, mode)
		}
	}
	var libc []string
	for p, f := range byPath {
		if strings.HasPrefix(filepath.Base(p), "libc.so.") && f.Mode == 0o644 {
			libc = append(libc, p)
		}
	}
	if len(libc) != 1 {
		t.Errorf("libc (mode 0644) %q among %d files, want one", libc, len(files))
	}
}

// The two images run what the suite runs in them: the socat image its listener's script
// (grep -E, tr, awk, socat TCP-LISTEN with fork and SYSTEM), the netshoot image its request
// (`echo hi | nc -v -w 2 -4 HOST PORT`), which gets the listener's answer. Each runs as a
// chroot of its unpacked layer, on this machine's loopback.
func TestTheImagesRunTheSuitesCommands(t *testing.T) {
	testenv.SkipIfShort(t, "root and Debian's packages (ci/conformance-debs.sh)")
	if os.Getuid() != 0 {
		t.Skip("needs root (chroot)")
	}
	root, err := testbed.CIToolPath(testenv.LogWriter(t), "conformance-debs.sh")
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	socat, _ := unpack(t, root, suiteImages[0])
	netshoot, entrypoint := unpack(t, root, suiteImages[1])

	script := `first_ip=$(echo "127.0.0.1,::1" | tr ',' ' ' | awk '{print $1}')
echo "$first_ip" | grep -qE '^[0-9]{1,3}(\.[0-9]{1,3}){3}$' || exit 3
export first_ip
exec socat TCP-LISTEN:` + freePort(t) + `,bind=127.0.0.1,crlf,reuseaddr,fork SYSTEM:'echo "pod ip $first_ip"'`
	listener := chrootCommand(ctx, socat, "/bin/sh", "-c", script)
	port := script[strings.Index(script, "LISTEN:")+7 : strings.Index(script, ",bind")]
	var listenerOut testenv.Buffer
	listener.Stdout, listener.Stderr = &listenerOut, &listenerOut
	if err := listener.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = listener.Process.Kill(); _ = listener.Wait() })

	// As the request pod runs: its arguments after the image's entrypoint.
	request := append(entrypoint, "/bin/sh", "-ec", "echo hi | nc -v -w 2 -4 127.0.0.1 "+port+" 2>&1")
	testenv.Eventually(t, 10*time.Second, "the request pod's nc to get the listener's answer", func() error {
		out, err := chrootCommand(ctx, netshoot, request[0], request[1:]...).CombinedOutput()
		if !strings.Contains(string(out), "pod ip 127.0.0.1") {
			return errors.New(strings.Join([]string{"request:", string(out), errString(err), "listener:", listenerOut.String()}, "\n"))
		}
		return nil
	})
	for _, applet := range []string{"nslookup", "sleep", "tail", "grep", "awk"} {
		if out, err := chrootCommand(ctx, netshoot, "/bin/sh", "-c", "command -v "+applet+" && "+applet+" --help 2>&1 | head -n 1").CombinedOutput(); err != nil || !strings.Contains(string(out), "BusyBox") {
			t.Errorf("%s in the netshoot image: %v\n%s", applet, err, out)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return "exit 0"
	}
	return err.Error()
}

// unpack builds img and unpacks its one platform's file system into a directory; it returns
// that and the image's entrypoint.
func unpack(t *testing.T, root string, img image) (string, []string) {
	t.Helper()
	idx, err := img.build(t.Context(), root, images.Options{Dir: testbed.RepoRoot()})
	if err != nil {
		t.Fatal(err)
	}
	manifest, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var image v1.Image
	if image, err = idx.Image(manifest.Manifests[0].Digest); err != nil {
		t.Fatal(err)
	}
	cf, err := image.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	fsys := mutate.Extract(image)
	defer fsys.Close()
	tr := tar.NewReader(fsys)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return dir, cf.Config.Entrypoint
		}
		if err != nil {
			t.Fatal(err)
		}
		target := filepath.Join(dir, h.Name)
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(target, os.FileMode(h.Mode)&os.ModePerm)
		case tar.TypeReg:
			var data []byte
			if data, err = io.ReadAll(tr); err == nil {
				err = os.WriteFile(target, data, os.FileMode(h.Mode)&os.ModePerm)
			}
		default:
			t.Fatalf("%s in %s: tar type %c; the images hold files and directories only", h.Name, img.name, h.Typeflag)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// chrootCommand runs name in dir as its root, with the image's PATH and /proc.
func chrootCommand(ctx context.Context, dir, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: dir}
	return cmd
}

// freePort is a TCP port of 127.0.0.1 nothing listens on.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}
