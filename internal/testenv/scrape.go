package testenv

import (
	"context"
	"net/http"

	"github.com/kube-semaphore/semaphore/internal/testbed"
)

// Sample is one sample of a scraped metric (testbed.Sample).
type Sample = testbed.Sample

// Scrape is testbed.Scrape: the samples at url whose names start with prefix.
func Scrape(ctx context.Context, client *http.Client, url, prefix string) ([]Sample, error) {
	return testbed.Scrape(ctx, client, url, prefix)
}

// SampleSum is testbed.SampleSum: the sum and number of the samples of name with labels.
func SampleSum(ss []Sample, name string, labels map[string]string) (sum float64, n int) {
	return testbed.SampleSum(ss, name, labels)
}

// WireGuardAllowedIPs is testbed.WireGuardAllowedIPs: the allowed IPs of each peer of the
// userspace WireGuard device behind the UAPI socket.
func WireGuardAllowedIPs(socket string) (map[string][]string, error) {
	return testbed.WireGuardAllowedIPs(socket)
}
