package testbed

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/kube-semaphore/semaphore/internal/promtext"
)

// Sample is one sample of a scraped metric: a counter's, gauge's or untyped metric's value.
type Sample struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// Scrape reads the Prometheus text exposition at url with client and returns the samples of
// the counters, gauges and untyped metrics whose names start with prefix ("" for all).
func Scrape(ctx context.Context, client *http.Client, url, prefix string) ([]Sample, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("%s: %s: %s", url, resp.Status, b)
	}
	metrics, err := promtext.Parse(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", url, err)
	}
	var out []Sample
	for name, series := range metrics {
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		for _, s := range series {
			out = append(out, Sample{Name: name, Labels: s.Labels, Value: s.Value})
		}
	}
	return out, nil
}

// SampleSum is the sum of the samples of name whose labels include labels, and how many there
// are.
func SampleSum(ss []Sample, name string, labels map[string]string) (sum float64, n int) {
	for _, s := range ss {
		if s.Name != name {
			continue
		}
		match := true
		for k, v := range labels {
			if s.Labels[k] != v {
				match = false
				break
			}
		}
		if match {
			sum += s.Value
			n++
		}
	}
	return sum, n
}
