package main

import (
	"os/exec"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
)

// labUp is the line the lab prints once everything it started works.
var (
	labUp     = regexp.MustCompile(`(?m)^lab: \[\s*([0-9.]+)s\] up$`)
	labPassed = regexp.MustCompile(`lab check: PASSED in (\S+)`)
)

// BenchmarkLabUp runs `lab check` with warm caches (what every run after the first has) and
// reports how long the lab takes to be up (every part started, every pod running, and the
// mirrors, network sets, DNS, readiness, handshakes and the forwarders' requests as the status
// wants them), and the whole check with the teardown. The aim is under two minutes to up.
func BenchmarkLabUp(b *testing.B) {
	bin := testenv.BuildBinary(b, "github.com/kube-semaphore/semaphore/lab")
	// The first run fills the caches (the Kubernetes binaries, CoreDNS, helm, the images' builds).
	if out, err := exec.Command(bin, "-dir", b.TempDir(), "check").CombinedOutput(); err != nil {
		b.Fatalf("lab check: %v\n%s", err, out)
	}
	var up, total float64
	for b.Loop() {
		out, err := exec.Command(bin, "-dir", b.TempDir(), "check").CombinedOutput()
		if err != nil {
			b.Fatalf("lab check: %v\n%s", err, out)
		}
		m := labUp.FindSubmatch(out)
		if m == nil {
			b.Fatalf("lab check printed no up line:\n%s", out)
		}
		s, _ := strconv.ParseFloat(string(m[1]), 64)
		up += s
		if done := labPassed.FindSubmatch(out); done != nil {
			d, _ := time.ParseDuration(string(done[1]))
			total += d.Seconds()
		}
	}
	b.ReportMetric(up/float64(b.N), "s-to-up")
	b.ReportMetric(total/float64(b.N), "s-check")
}
