package check

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/release"
)

// env is the component's value of name, or def when it does not set it (the component's
// default).
func env(c release.Component, name, def string) string {
	if v, ok := c.Env[name]; ok {
		return v
	}
	return def
}

// most lists at most n items of s, saying how many more there are.
func most(s []string, n int) string {
	slices.Sort(s)
	if len(s) <= n {
		return strings.Join(s, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(s[:n], ", "), len(s)-n)
}

// finding is one kind of drift: how many objects, described as what, and their names.
type finding struct {
	what  string
	names []string
}

// drift describes the findings that have names ("" when none has): "3 <what> (a, b, c); ...".
func drift(findings ...finding) string {
	var parts []string
	for _, f := range findings {
		if len(f.names) > 0 {
			parts = append(parts, fmt.Sprintf("%d %s (%s)", len(f.names), f.what, most(f.names, 5)))
		}
	}
	return strings.Join(parts, "; ")
}

// compare compares what a controller should have made, want, with what it made, have, both by
// key: missing are the keys wanted and not made, extra those made and not wanted, and differ
// those made otherwise than wanted (same says whether a made object is as wanted).
func compare[W, H any](want map[string]W, have map[string]H, same func(W, H) bool) (missing, differ, extra []string) {
	for k, w := range want {
		h, ok := have[k]
		switch {
		case !ok:
			missing = append(missing, k)
		case !same(w, h):
			differ = append(differ, k)
		}
	}
	for k := range have {
		if _, ok := want[k]; !ok {
			extra = append(extra, k)
		}
	}
	return missing, differ, extra
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
