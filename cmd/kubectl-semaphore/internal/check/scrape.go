package check

import (
	"bytes"

	"github.com/kube-semaphore/semaphore/internal/promtext"
)

// scrape is what one pod's /metrics says: the series of each metric family, by family name.
type scrape = promtext.Metrics

// series is one series: its labels and value.
type series = promtext.Series

// parseScrape parses the Prometheus text exposition of a /metrics.
func parseScrape(text []byte) (scrape, error) { return promtext.Parse(bytes.NewReader(text)) }
