package status

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/kube-semaphore/semaphore/lab/layout"
)

// perCluster is a list read from every cluster, or why a cluster could not be read.
type perCluster[T any] struct {
	items map[string][]T
	errs  map[string]error
}

// listInEveryCluster reads list from every cluster of rec at once.
func listInEveryCluster[T any](ctx context.Context, rec *layout.Record, list func(ctx context.Context, kubeconfig string) ([]T, error)) perCluster[T] {
	out := perCluster[T]{items: map[string][]T{}, errs: map[string]error{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, c := range rec.Clusters {
		wg.Go(func() {
			items, err := list(ctx, c.DirectKubeconfig)
			mu.Lock()
			defer mu.Unlock()
			out.items[c.Name], out.errs[c.Name] = items, err
		})
	}
	wg.Wait()
	return out
}

// findItem is the first item of cluster that match accepts.
func (p perCluster[T]) findItem(cluster string, match func(T) bool) (T, bool) {
	if i := slices.IndexFunc(p.items[cluster], match); i >= 0 {
		return p.items[cluster][i], true
	}
	var zero T
	return zero, false
}

// listProblems are the clusters whose what could not be listed.
func (p perCluster[T]) listProblems(rec *layout.Record, what string) []string {
	var problems []string
	for _, c := range rec.Clusters {
		if err := p.errs[c.Name]; err != nil {
			problems = append(problems, fmt.Sprintf("%s: listing %s: %v", c.Name, what, err))
		}
	}
	return problems
}

// printRows prints a table of every cluster's items, one row each (row ends with a newline),
// "(none)" for a cluster without any, or the error reading it.
func (p perCluster[T]) printRows(w io.Writer, rec *layout.Record, row func(cluster string, item T) string) {
	tw := table(w)
	for _, c := range rec.Clusters {
		if err := p.errs[c.Name]; err != nil {
			fmt.Fprintf(tw, "  %s\terror: %v\n", c.Name, err)
			continue
		}
		if len(p.items[c.Name]) == 0 {
			fmt.Fprintf(tw, "  %s\t(none)\n", c.Name)
		}
		for _, item := range p.items[c.Name] {
			fmt.Fprint(tw, row(c.Name, item))
		}
	}
	tw.Flush()
}
