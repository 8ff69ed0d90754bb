package testbed

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

// CoreDNSLog is the file in StartCoreDNS's directory that gets CoreDNS's output.
const CoreDNSLog = "coredns.log"

// StartCoreDNS runs CoreDNS with corefile, keeping its Corefile and its output (CoreDNSLog) in
// dir, and returns the address (127.0.0.1:port, UDP and TCP) it serves DNS on and stop, which
// kills it. The server blocks in corefile must not name a port: CoreDNS gives them the free port
// chosen here (-dns.port). When CoreDNS does not come up, the error holds its output.
func StartCoreDNS(dir, corefile string) (addr string, stop func(), err error) {
	bin, err := CoreDNSBinary()
	if err != nil {
		return "", nil, fmt.Errorf("building coredns: %w", err)
	}
	conf := filepath.Join(dir, "Corefile")
	if err := os.WriteFile(conf, []byte(corefile), 0o644); err != nil {
		return "", nil, err
	}
	port, err := freeDNSPort()
	if err != nil {
		return "", nil, fmt.Errorf("choosing a port for coredns: %w", err)
	}
	addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	logPath := filepath.Join(dir, CoreDNSLog)
	logFile, err := os.Create(logPath)
	if err != nil {
		return "", nil, err
	}
	defer logFile.Close()
	cmd := exec.Command(bin, "-conf", conf, "-dns.port", strconv.Itoa(port))
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("starting coredns: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop = func() {
		_ = cmd.Process.Kill()
		exited <- <-exited // its error only says that it was killed; kept for a second stop
	}
	if err := awaitListener(addr, exited); err != nil {
		stop()
		out, _ := os.ReadFile(logPath)
		return "", nil, fmt.Errorf("%w; coredns output:\n%s", err, out)
	}
	return addr, stop, nil
}

// awaitListener waits up to a minute for a TCP listener on addr, unless the process reports on
// exited first. CoreDNS opens its UDP and TCP listeners together, after every plugin (the
// kubernetes plugin waits up to 5 s for its caches) has started, so an accepted TCP connection
// means it serves queries on both.
func awaitListener(addr string, exited chan error) error {
	deadline := time.Now().Add(time.Minute)
	for {
		select {
		case err := <-exited:
			exited <- err // for stop
			return fmt.Errorf("coredns exited at start: %w", err)
		default:
		}
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			conn.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("coredns does not listen on %s: %w", addr, err)
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
