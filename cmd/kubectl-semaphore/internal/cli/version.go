package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/versions"
	"github.com/kube-semaphore/semaphore/internal/version"
)

// versionReport is what `kubectl semaphore version` says: of the plugin itself, and of the
// components running in the cluster of each context read (none with --client).
type versionReport struct {
	Client   version.Build      `json:"client"`
	Clusters []versions.Cluster `json:"clusters,omitempty"`
}

func newVersion(o *options) *cobra.Command {
	var clientOnly bool
	var contexts []string
	var output *outputFormat
	cmd := &cobra.Command{
		Use:   "version [--client] [--contexts CTX,...]",
		Short: "Print the plugin's version, and the versions of the Semaphore components in the cluster",
		Long: `Prints the version of kubectl-semaphore (the release it comes from, "dev" for a build of
its own), the Go version it was built with, its platform and, when the Go toolchain stamped
them, the commit it was built from and whether the work tree was modified.

Then, unless --client is given, for the cluster of the context (or of each of --contexts), the
Semaphore components running there (the workloads labelled app.kubernetes.io/part-of=semaphore,
-n narrows to one namespace): each one's image, its tag and the digest the container runtime
pulled (the pods' container status), and how many of the pods that run it are ready. A
component without pods shows the image of its pod template, 0/0.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := versionReport{Client: version.Current()}
			var err error
			if !clientOnly {
				v.Clusters, err = onContexts(cmd.Context(), o, contexts, o.readVersions)
			}
			if perr := output.print(o.out, v, func() error { return v.write(o.out) }); perr != nil {
				return perr
			}
			return err
		},
	}
	cmd.Flags().BoolVar(&clientOnly, "client", false, "print the plugin's version alone, reading no cluster")
	addContexts(cmd, &contexts, "whose components to show")
	cmd.MarkFlagsMutuallyExclusive("client", "contexts")
	output = addOutput(cmd, "a line for the plugin, a table per cluster")
	return cmd
}

// readVersions reads the versions of the components in the cluster of context name.
func (o *options) readVersions(ctx context.Context, name string) (versions.Cluster, error) {
	client, _, err := o.client(name)
	if err != nil {
		return versions.Cluster{}, err
	}
	cl, err := versions.Read(ctx, client, o.namespace())
	cl.Context = name
	return cl, err
}

// write writes the report as text: the plugin's version on its first line, then a table of
// each cluster's components.
func (v versionReport) write(w io.Writer) error {
	if _, err := fmt.Fprintf(w, "kubectl-semaphore %s\n", v.Client); err != nil {
		return err
	}
	if len(v.Clusters) == 0 {
		return nil
	}
	if _, err := fmt.Fprintln(w); err != nil {
		return err
	}
	return versions.WriteTable(w, v.Clusters)
}
