package testenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// CoreDNSBinary returns the path of a CoreDNS binary with the plugins a Kubernetes Corefile
// uses, building it with ci/coredns.sh (once per process) when it is not cached yet.
func CoreDNSBinary() (string, error) {
	corednsOnce.Do(func() {
		cmd := exec.Command("bash", filepath.Join(RepoRoot(), "ci", "coredns.sh"))
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			corednsErr = fmt.Errorf("ci/coredns.sh: %w", err)
			return
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		corednsBin = lines[len(lines)-1]
	})
	return corednsBin, corednsErr
}

var (
	corednsOnce sync.Once
	corednsBin  string
	corednsErr  error
)

// StartCoreDNS runs CoreDNS with corefile until the test ends and returns the address
// (127.0.0.1:port, UDP and TCP) it serves DNS on. The server blocks in corefile must not name a
// port: CoreDNS gives them the free port chosen here (-dns.port). The output of CoreDNS is
// logged when the test fails.
func StartCoreDNS(t testing.TB, corefile string) (addr string) {
	t.Helper()
	bin, err := CoreDNSBinary()
	if err != nil {
		t.Fatalf("building coredns: %v", err)
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "Corefile")
	if err := os.WriteFile(conf, []byte(corefile), 0o644); err != nil {
		t.Fatal(err)
	}
	port, err := freeDNSPort()
	if err != nil {
		t.Fatalf("choosing a port for coredns: %v", err)
	}
	addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	logPath := filepath.Join(dir, "coredns.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd := exec.Command(bin, "-conf", conf, "-dns.port", strconv.Itoa(port))
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting coredns: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	logged := false
	logOutput := func() {
		if out, err := os.ReadFile(logPath); err == nil && !logged {
			logged = true
			t.Logf("coredns output:\n%s", out)
		}
	}
	// Registered after t.TempDir, so it runs before the directory (and the log) is removed.
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited // its error only says that it was killed
		if t.Failed() {
			logOutput()
		}
	})

	// CoreDNS opens its UDP and TCP listeners together, after every plugin (the kubernetes
	// plugin waits up to 5 s for its caches) has started, so an accepted TCP connection means
	// it serves queries on both.
	deadline := time.Now().Add(time.Minute)
	for {
		select {
		case err := <-exited:
			exited <- err // for the cleanup
			logOutput()
			t.Fatalf("coredns exited at start: %v", err)
		default:
		}
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			conn.Close()
			return addr
		}
		if time.Now().After(deadline) {
			logOutput()
			t.Fatalf("coredns does not listen on %s: %v", addr, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// freeDNSPort returns a port free for both UDP and TCP on 127.0.0.1 at the time of the call.
func freeDNSPort() (int, error) {
	var err error
	for range 20 {
		var tl net.Listener
		if tl, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return 0, err
		}
		port := tl.Addr().(*net.TCPAddr).Port
		var ul net.PacketConn
		ul, err = net.ListenPacket("udp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		tl.Close()
		if err == nil {
			ul.Close()
			return port, nil
		}
	}
	return 0, err
}

// Resolver returns a resolver that sends every query to the DNS server at addr, ignoring
// /etc/resolv.conf. (Its errors still name a server from /etc/resolv.conf: the resolver picks
// that address before Dial ignores it.)
func Resolver(addr string) *net.Resolver {
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		},
	}
}

// LookupHost resolves name (A and AAAA) at the DNS server at addr and returns the addresses
// sorted. name is always treated as fully qualified, so no search domains are tried.
func LookupHost(ctx context.Context, addr, name string) ([]string, error) {
	return lookupHost(ctx, Resolver(addr), addr, name)
}

func lookupHost(ctx context.Context, r *net.Resolver, addr, name string) ([]string, error) {
	if !strings.HasSuffix(name, ".") {
		name += "."
	}
	addrs, err := r.LookupHost(ctx, name)
	if dnsErr := (*net.DNSError)(nil); errors.As(err, &dnsErr) {
		dnsErr.Server = addr
	}
	slices.Sort(addrs)
	return addrs, err
}

// CorefileFromDocs returns the Corefile that docs/coredns.md tells users to deploy (its only
// ```corefile block), changed only where a test outside a pod must differ from CoreDNS in a
// cluster:
//
//   - the kubernetes plugin gets `kubeconfig <kubeconfig>` (in a pod it uses its ServiceAccount);
//   - the fixed ports (.:53, health's 8080, ready's 8181, prometheus' 9153) become free ports on
//     127.0.0.1, so tests can run side by side (StartCoreDNS chooses the DNS port);
//   - the mirror namespace "semaphore" in the rewrite target becomes mirrorNamespace.
//
// It fails the test when the block no longer has the shape these changes expect, so the doc and
// the test cannot drift apart silently.
func CorefileFromDocs(t testing.TB, kubeconfig, mirrorNamespace string) string {
	t.Helper()
	corefile, err := CorefileFromDocsFile(kubeconfig, mirrorNamespace)
	if err != nil {
		t.Fatalf("docs/coredns.md: %v", err)
	}
	return corefile
}

// DocsCorefile is the Corefile docs/coredns.md tells users to deploy, as it stands there: what
// the lab's CoreDNS pods run.
func DocsCorefile() (string, error) {
	doc, err := os.ReadFile(filepath.Join(RepoRoot(), "docs", "coredns.md"))
	if err != nil {
		return "", err
	}
	return fencedBlock(string(doc), "corefile")
}

// CorefileFromDocsFile is CorefileFromDocs for callers that are not tests (the local lab): it
// returns the adapted Corefile, or the error CorefileFromDocs fails the test with.
func CorefileFromDocsFile(kubeconfig, mirrorNamespace string) (string, error) {
	block, err := DocsCorefile()
	if err != nil {
		return "", err
	}
	if strings.ContainsAny(kubeconfig, "\"\\ \t\n") {
		return "", fmt.Errorf("kubeconfig path %q needs quoting in a Corefile", kubeconfig)
	}
	// Whole trimmed lines, replaced keeping their indentation.
	lines := map[string]string{
		".:53 {":           ". {\n    bind 127.0.0.1",
		"health {":         "health 127.0.0.1:0 {",
		"ready":            "ready 127.0.0.1:0",
		"prometheus :9153": "prometheus 127.0.0.1:0",
	}
	seen := map[string]int{}
	var out []string
	for _, line := range strings.Split(block, "\n") {
		trimmed := strings.TrimSpace(line)
		indent := line[:len(line)-len(strings.TrimLeft(line, " \t"))]
		if repl, ok := lines[trimmed]; ok {
			seen[trimmed]++
			line = indent + repl
		}
		if strings.HasPrefix(trimmed, "kubernetes ") && strings.HasSuffix(trimmed, "{") {
			seen["kubernetes"]++
			line += "\n" + indent + "   kubeconfig " + kubeconfig
		}
		out = append(out, line)
	}
	lines["kubernetes"] = ""
	for want := range lines {
		if seen[want] != 1 {
			return "", fmt.Errorf("the corefile block has %q %d times, want once", want, seen[want])
		}
	}
	corefile := strings.Join(out, "\n")
	const target = ".semaphore.svc.cluster.local."
	if n := strings.Count(corefile, target); n != 1 {
		return "", fmt.Errorf("the corefile block has %q %d times, want once (in the rewrite target)", target, n)
	}
	return strings.Replace(corefile, target, "."+mirrorNamespace+".svc.cluster.local.", 1), nil
}

// fencedBlock returns the content of the only code block in markdown fenced as ```lang.
func fencedBlock(markdown, lang string) (string, error) {
	var blocks []string
	var cur []string
	in := false
	for _, line := range strings.Split(markdown, "\n") {
		switch {
		case !in && strings.TrimSpace(line) == "```"+lang:
			in, cur = true, nil
		case in && strings.TrimSpace(line) == "```":
			in = false
			blocks = append(blocks, strings.Join(cur, "\n")+"\n")
		case in:
			cur = append(cur, line)
		}
	}
	if in {
		return "", errors.New("unterminated ```" + lang + " block")
	}
	if len(blocks) != 1 {
		return "", fmt.Errorf("%d ```%s blocks, want exactly one", len(blocks), lang)
	}
	return blocks[0], nil
}
