// Package status is what the lab shows of itself: every part of it that exposes something to
// look at is a part of the status (one file each), which collects what it shows from the
// running lab described by its run record (Record), says what is wrong with it (its
// problems) and prints its section. Status lists the parts in the order they print; a new
// part is a new file and one line there.
//
// The lab waits for the status to show no problem before it calls itself up (WaitReady),
// `lab status` prints it (Show), and the checks of lab/scenarios read the lab through the
// same parts.
package status

import (
	"context"
	"fmt"
	"io"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/kube-semaphore/semaphore/lab/layout"
)

// part is what the status shows of one part of the lab: collect reads it from the running
// lab described by the record, problems compares it with what the lab must show, and print
// prints its section.
type part interface {
	collect(ctx context.Context, rec *layout.Record)
	problems(rec *layout.Record) []string
	print(w io.Writer, rec *layout.Record)
}

// Status is what the lab looks like right now, read from the clusters, CoreDNS, the nodes,
// Prometheus and the controllers' admin servers: the status of each of its parts.
type Status struct {
	parts []part
}

// newStatus is the status of every part, not read yet, in the order they print.
func newStatus() *Status {
	mirrors := &mirrorsStatus{}
	// One read of the IPAM blocks for both parts that check against them.
	blocks := &calicoBlocks{}
	return &Status{parts: []part{
		clustersStatus{},
		&networkStatus{},
		mirrors,
		&netSetsStatus{},
		&dnsStatus{mirrors: mirrors},
		&wireguardStatus{blocks: blocks},
		&trafficStatus{blocks: blocks},
		&globalStatus{},
		&controllersStatus{},
		&prometheusStatus{},
		&hostileStatus{},
		hints{},
		chartsStatus{},
	}}
}

// Collect reads the status of the lab described by rec, every part at once.
func Collect(ctx context.Context, rec *layout.Record) *Status {
	s := newStatus()
	var wg sync.WaitGroup
	for _, p := range s.parts {
		wg.Go(func() { p.collect(ctx, rec) })
	}
	wg.Wait()
	return s
}

// Problems compares the status with what the lab must show: every part's problems.
func (s *Status) Problems(rec *layout.Record) []string {
	var problems []string
	for _, p := range s.parts {
		problems = append(problems, p.problems(rec)...)
	}
	return problems
}

// Print prints what a user of the lab wants to see and how to poke at it.
func (s *Status) Print(w io.Writer, rec *layout.Record) {
	up := time.Since(rec.Started).Round(time.Second)
	fmt.Fprintf(w, "Semaphore lab: %s for %s (pid %d, directory %s)\n", rec.Phase, up, rec.PID, rec.Dir)
	for _, p := range s.parts {
		p.print(w, rec)
	}
	fmt.Fprintln(w)
}

// WaitReady polls the status until it shows no problem, a child of the lab exits, or timeout
// passes, and returns the last status and its problems.
func WaitReady(ctx context.Context, rec *layout.Record, timeout time.Duration, exited <-chan error) (*Status, []string) {
	deadline := time.Now().Add(timeout)
	for {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		s := Collect(cctx, rec)
		cancel()
		problems := s.Problems(rec)
		if len(problems) == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			return s, problems
		}
		select {
		case <-ctx.Done():
		case err := <-exited:
			return s, append(problems, err.Error())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// PrintProblems lists what is wrong, if anything.
func PrintProblems(w io.Writer, problems []string) {
	if len(problems) == 0 {
		return
	}
	fmt.Fprintln(w, "PROBLEMS")
	for _, p := range problems {
		fmt.Fprintf(w, "  - %s\n", p)
	}
	fmt.Fprintln(w)
}

// printOnly is embedded by the parts of the status that print from the record alone, with
// nothing to read or check.
type printOnly struct{}

func (printOnly) collect(context.Context, *layout.Record) {}
func (printOnly) problems(*layout.Record) []string        { return nil }

func section(w io.Writer, title string) {
	fmt.Fprintf(w, "\n%s\n", title)
}

func table(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
}
