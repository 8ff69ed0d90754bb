package cli

import (
	"context"
	"fmt"
	"sync"

	"github.com/spf13/cobra"
)

// addContexts adds --contexts, the kubeconfig contexts of the clusters a command reads (what
// it does with them: "to show").
func addContexts(cmd *cobra.Command, contexts *[]string, what string) {
	cmd.Flags().StringSliceVar(contexts, "contexts", nil, "kubeconfig contexts of the clusters "+what+", comma-separated or repeated (default: the current context, or --context)")
}

// onContexts reads the cluster of every context (the current one when there are none) with
// read, in parallel, and returns what it read of each, in order. A context that cannot be
// read is reported on o.errOut and left out; the error then says that the command could not
// do all it was asked (exit status 2).
func onContexts[T any](ctx context.Context, o *options, contexts []string, read func(ctx context.Context, context string) (T, error)) ([]T, error) {
	if len(contexts) == 0 {
		contexts = []string{""}
	}
	got := make([]T, len(contexts))
	errs := make([]error, len(contexts))
	var wg sync.WaitGroup
	for i, name := range contexts {
		wg.Go(func() { got[i], errs[i] = read(ctx, name) })
	}
	wg.Wait()
	failed := 0
	var out []T
	for i, err := range errs {
		if err != nil {
			failed++
			fmt.Fprintf(o.errOut, "error: %s: %v\n", contextName(contexts[i]), unreachable(err))
			continue
		}
		out = append(out, got[i])
	}
	if failed > 0 {
		return out, exitError{code: exitCannotRun}
	}
	return out, nil
}

func contextName(name string) string {
	if name == "" {
		return "current context"
	}
	return "context " + name
}
