package cli

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/mesh"
)

func newGraph(o *options) *cobra.Command {
	var flags meshFlags
	cmd := &cobra.Command{
		Use:   "graph [--contexts CTX,...]",
		Short: "The mesh as a Graphviz DOT graph: clusters, nodes, and WireGuard tunnels with their handshake age",
		Long: `graph prints what status shows as one Graphviz graph: a box per cluster with its nodes, the
WireGuard tunnels between nodes of different clusters labelled with the age of their last
handshake (red when never or stale), and from each remote to the cluster that reads it the
number of mirrors and network sets (red when unreachable). Render it with
  kubectl semaphore graph --contexts aws,gcp | dot -Tsvg > mesh.svg

` + meshReads,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			states, err := flags.collect(cmd.Context(), o)
			if len(states) > 0 {
				if werr := mesh.WriteDOT(o.out, states, time.Now()); werr != nil {
					return werr
				}
			}
			return err
		},
	}
	flags.add(cmd)
	return cmd
}
