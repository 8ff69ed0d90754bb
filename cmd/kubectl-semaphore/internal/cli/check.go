package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/dynamic"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/check"
)

// newCheck is `kubectl semaphore check`.
func newCheck(o *options) *cobra.Command {
	var output string
	var opts check.Options
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Check the Semaphore controllers of the context's cluster and every remote they read",
		Long: `Checks, for the cluster of the context: that the Semaphore components' pods are ready; and
for every remote each component reads, with the very credentials its pods mount, that the remote
answers, that it grants exactly what the cluster's components need (access reviews), that the
mirrors and network sets match the remote, and that every WireGuard peer handshook recently.
Prints one line per check; exits non-zero when any fails. -n narrows to one release's namespace.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "" && output != "json" {
				return fmt.Errorf("--output: %q is not json", output)
			}
			client, cfg, err := o.client("")
			if err != nil {
				return err
			}
			dyn, err := dynamic.NewForConfig(cfg)
			if err != nil {
				return err
			}
			if o.flags.Namespace != nil {
				opts.Namespace = *o.flags.Namespace
			}
			results, err := check.Run(cmd.Context(), client, dyn, opts)
			if err != nil {
				return err
			}
			if output == "json" {
				err = check.PrintJSON(o.out, results)
			} else {
				err = check.Print(o.out, results)
			}
			if err != nil {
				return err
			}
			if check.Failed(results) {
				return exitError{code: 1}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: json (default: one line per check)")
	cmd.Flags().DurationVar(&opts.Timeout, "remote-timeout", 10*time.Second, "timeout of each request to a remote cluster")
	cmd.Flags().StringSliceVar(&opts.Skip, "skip", nil, "checks not to run, e.g. peers,handshakes where the API server cannot reach the pods")
	cmd.Flags().DurationVar(&opts.MaxHandshakeAge, "max-handshake-age", 3*time.Minute, "how old a WireGuard peer's last handshake may be")
	addAllowExec(cmd, &opts.AllowExecPlugins)
	return cmd
}
