// Command sample is the lab's sample workload: one static binary for both sides of the
// multi-cluster demo of the Semaphore blog post, run in the lab's pods.
//
//	sample serve [-listen ADDRS]                      fluentd, the log collector (aws)
//	sample send -url URL [-interval D] [-timeout D]   its forwarders, the clients (gcp)
//
// "sample serve" stands in for fluentd: an HTTP server on each of its addresses that logs
// every request as one JSON line, with the address the request's TCP connection came from.
// "sample send" stands in for a forwarder: it sends a GET to fluentd (by the DNS name of its
// mirror) every interval and logs each attempt. The lab reads fluentd's log to check that the
// forwarders reach it across clusters, and that the client it sees is the forwarder pod's own
// address: WireGuard carries pod addresses end to end, without NAT.
//
// Both log to stdout with log/slog's JSON handler, name their pod by $POD_NAME (or the host
// name), and exit 0 promptly on SIGTERM or SIGINT, a pod's graceful stop. A bad command line
// exits 2, a failure (an address already in use) 1.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

const usage = `Usage: sample <command> [flags]

The lab's sample workload, for both sides of the multi-cluster demo. Both commands log JSON
lines to stdout and exit 0 on SIGTERM or SIGINT.

Commands:
  serve   fluentd: serve HTTP on each -listen address, logging one line per request
  send    a forwarder: GET -url every -interval, logging one line per attempt

Run "sample <command> -h" for a command's flags.
`

// fromHeader names the sending pod in a request from "sample send".
const fromHeader = "X-Sample-From"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run runs the command line args until ctx is done and returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch cmd, rest := args[0], args[1:]; cmd {
	case "serve":
		return serveMain(ctx, rest, stdout, stderr)
	case "send":
		return sendMain(ctx, rest, stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "sample: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
}

// commandLine is a command's flags and usage.
type commandLine struct {
	*flag.FlagSet
	synopsis string // after "sample <name> "
	about    string // what -h adds to the usage
}

func newCommandLine(name, synopsis, about string) *commandLine {
	c := &commandLine{FlagSet: flag.NewFlagSet(name, flag.ContinueOnError), synopsis: synopsis, about: about}
	c.Usage = func() { c.printUsage(c.Output(), false) }
	return c
}

// printUsage prints the synopsis and the flags, and with long what the command does.
func (c *commandLine) printUsage(w io.Writer, long bool) {
	fmt.Fprintf(w, "Usage: sample %s %s\n\n", c.Name(), c.synopsis)
	if long {
		fmt.Fprintf(w, "%s\n", c.about)
	}
	fmt.Fprint(w, "Flags:\n")
	c.SetOutput(w)
	c.PrintDefaults()
}

// parse parses args; ok is false when the command must not run, and code is then its exit
// code: 0 after -h (the usage on stdout), 2 for a bad command line (the error and the usage
// on stderr). Afterwards the flag set writes to stderr, for usageError.
func (c *commandLine) parse(args []string, stdout, stderr io.Writer) (code int, ok bool) {
	var out bytes.Buffer
	c.SetOutput(&out)
	err := c.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		c.printUsage(stdout, true)
		c.SetOutput(stderr)
		return 0, false
	case err != nil:
		// The flag package's message names the flag: "invalid value ... for flag -interval".
		stderr.Write(out.Bytes())
		c.SetOutput(stderr)
		return 2, false
	}
	c.SetOutput(stderr)
	if c.NArg() > 0 {
		return c.usageError("unexpected argument %q", c.Arg(0)), false
	}
	return 0, true
}

// usageError reports a bad command line, the message saying what is wrong with it (naming
// the flag), and returns exit code 2.
func (c *commandLine) usageError(format string, args ...any) int {
	fmt.Fprintf(c.Output(), "sample %s: %s\n", c.Name(), fmt.Sprintf(format, args...))
	c.Usage()
	return 2
}

// newLogger logs JSON lines to w; each record is one write, so lines from concurrent
// requests never mix.
func newLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, nil))
}

// podName names this pod: $POD_NAME (the downward API), or the host name, which is the pod's
// name unless the pod sets another.
func podName() string {
	if name := os.Getenv("POD_NAME"); name != "" {
		return name
	}
	if name, err := os.Hostname(); err == nil && name != "" {
		return name
	}
	return "unknown"
}
