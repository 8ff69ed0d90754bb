package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
)

const serveAbout = `Stands in for fluentd: serves HTTP on every address and, for each request, logs one line
  {"msg":"request","listen":8888,"client":"198.18.3.10","method":"GET","path":"/","from":"forwarder-0"}
where listen is the port the request came in on, client the address of its TCP connection
(the sending pod's own address when nothing NATs it), and from the X-Sample-From header ("" if
none). Every request is answered 200 with the pod's name ($POD_NAME, or the host name);
/healthz is answered 200 too, but not logged: it is for probes.
`

// healthzPath is the probes' path, answered but not logged.
const healthzPath = "/healthz"

// shutdownGrace is how long serve waits for requests in progress once stopped, before it
// closes their connections. Requests are answered at once; a connection that has sent
// nothing yet would otherwise hold Shutdown for 5 s.
const shutdownGrace = time.Second

func serveMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cl := newCommandLine("serve", "[-listen ADDRS]", serveAbout)
	listen := cl.String("listen", ":8888,:8889", "comma-separated `addresses` (host:port, host optional) to serve HTTP on")
	if code, ok := cl.parse(args, stdout, stderr); !ok {
		return code
	}
	addrs, err := parseListen(*listen)
	if err != nil {
		return cl.usageError("-listen %q: %v", *listen, err)
	}
	if err := serve(ctx, addrs, podName(), newLogger(stdout)); err != nil {
		fmt.Fprintf(stderr, "sample serve: %v\n", err)
		return 1
	}
	return 0
}

// parseListen splits the -listen flag into addresses, each with a numeric port.
func parseListen(s string) ([]string, error) {
	var addrs []string
	for a := range strings.SplitSeq(s, ",") {
		a = strings.TrimSpace(a)
		if a == "" {
			return nil, errors.New("empty address")
		}
		_, port, err := net.SplitHostPort(a)
		if err != nil {
			return nil, err
		}
		n, err := strconv.ParseUint(port, 10, 16)
		if err != nil {
			return nil, fmt.Errorf("address %s: the port must be a number from 0 to 65535", a)
		}
		// Port 0 is any free port, a different one each time.
		if n != 0 && slices.Contains(addrs, a) {
			return nil, fmt.Errorf("address %s given twice", a)
		}
		addrs = append(addrs, a)
	}
	return addrs, nil
}

// serve serves HTTP on every address until ctx is done; an error is one to listen, or one
// that stopped a server.
func serve(ctx context.Context, addrs []string, pod string, log *slog.Logger) error {
	var lns []net.Listener
	for _, a := range addrs {
		ln, err := net.Listen("tcp", a)
		if err != nil {
			for _, ln := range lns {
				ln.Close()
			}
			return err
		}
		lns = append(lns, ln)
	}
	servers := make([]*http.Server, len(lns))
	errc := make(chan error, len(lns))
	for i, ln := range lns {
		servers[i] = &http.Server{
			Handler:           handler(ln.Addr().(*net.TCPAddr).Port, pod, log),
			ReadHeaderTimeout: 10 * time.Second,
			ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		}
		log.Info("listening", "addr", ln.Addr().String(), "pod", pod)
		go func() { errc <- servers[i].Serve(ln) }()
	}

	var err error
	select {
	case <-ctx.Done():
		log.Info("stopping", "reason", context.Cause(ctx).Error())
	case err = <-errc: // Serve returns only when its listener fails
		log.Error("stopping", "err", err.Error())
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	defer cancel()
	for _, s := range servers {
		if s.Shutdown(sctx) != nil {
			s.Close()
		}
	}
	return err
}

// handler answers every request with the pod's name and logs it, but for /healthz. It reads
// a request's body whole, and says how many bytes it received: a body larger than a path's
// MTU arrives only if every packet of it does.
func handler(port int, pod string, log *slog.Logger) http.Handler {
	reply := "served by " + pod
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if r.URL.Path == healthzPath {
			_, _ = io.WriteString(w, "ok\n")
			return
		}
		received, err := io.Copy(io.Discard, r.Body)
		// Logged before the answer: once a client has it, the line is written.
		log.Info("request",
			"listen", port,
			"client", clientIP(r.RemoteAddr),
			"method", r.Method,
			"path", r.URL.Path,
			"from", r.Header.Get(fromHeader),
			"body_bytes", received,
		)
		if err != nil {
			http.Error(w, fmt.Sprintf("reading the body: %v after %d bytes", err, received), http.StatusBadRequest)
			return
		}
		// A client gone is its business.
		if received > 0 {
			_, _ = fmt.Fprintf(w, "%s, received %d bytes\n", reply, received)
			return
		}
		_, _ = io.WriteString(w, reply+"\n")
	})
}

// clientIP is the IP address of a request's TCP connection (http.Request.RemoteAddr, never a
// header), without the port; an IPv4 client of a dual-stack listener is shown as IPv4.
func clientIP(remoteAddr string) string {
	if ap, err := netip.ParseAddrPort(remoteAddr); err == nil {
		return ap.Addr().Unmap().String()
	}
	if host, _, err := net.SplitHostPort(remoteAddr); err == nil {
		return host
	}
	return remoteAddr
}
