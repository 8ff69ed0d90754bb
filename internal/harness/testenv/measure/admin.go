package measure

import (
	"context"
	"net/http"
	"testing"

	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
)

// Admin is the address of the admin server of a binary a benchmark runs. The benchmark picks
// it, a loopback address free a moment ago, rather than letting the binary pick a port: it
// scrapes the binary's metrics.
type Admin string

// FreeAdmin is an Admin free a moment ago.
func FreeAdmin(b *testing.B) Admin {
	addr, err := testbed.FreeAddr()
	if err != nil {
		b.Fatal(err)
	}
	return Admin(addr)
}

// Setting is the binary's setting of the address.
func (a Admin) Setting() string { return "SEMAPHORE_ADMIN_ADDR=" + string(a) }

// Ready reports whether the admin server answers /readyz with 200.
func (a Admin) Ready() bool {
	resp, err := http.Get("http://" + string(a) + "/readyz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// Metrics are the series of the binary's metrics whose names start with prefix.
func (a Admin) Metrics(prefix string) (Samples, error) {
	return testbed.Scrape(context.Background(), http.DefaultClient, "http://"+string(a)+"/metrics", prefix)
}

// MustMetrics is Metrics, failing b on an error.
func (a Admin) MustMetrics(b *testing.B, prefix string) Samples {
	s, err := a.Metrics(prefix)
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// Samples are the series of a scrape.
type Samples []testbed.Sample

// Sum is the sum of the series of name whose labels include labels (0 if none).
func (s Samples) Sum(name string, labels map[string]string) float64 {
	sum, _ := testbed.SampleSum(s, name, labels)
	return sum
}
