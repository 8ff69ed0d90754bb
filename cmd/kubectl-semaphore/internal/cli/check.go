package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/check"
)

// checkLong is the help of `kubectl semaphore check`.
const checkLong = `Checks, for the cluster of the context, from where the controllers run: that the Semaphore
components' pods are ready; for every remote each component reads, what its pods' own metrics
(read through the API server's pod proxy) say: that the remote answers them and their view of it
is current, who they are there, that it forbade them nothing, and for WireGuard that every node of
the remote is a peer that handshook recently, the implementation in use and the MTU; and the
cluster's preflight: the CoreDNS rewrite of each remote, Calico's IP pools for the remotes' pod
ranges, and pod ranges that do not overlap; where the service mirror serves the Multi-Cluster
Services API, that the cluster serves it (its CRDs) and the service mirror too, that every local
ServiceExport is valid and ready, and that none is in conflict.

Nothing connects to an address read from the cluster's objects unless --probe-remotes is given:
then this machine also connects to each remote's API server, with the credentials the pods mount,
to ask what it answers and grants (access reviews) and to compare the mirrors, global services,
network sets and peers with the remote's objects.

Prints one line per check; exits 1 when any fails, 2 when it could not check. -n narrows to one
release's namespace. --skip leaves checks out by name; the checks are:
`

// newCheck is `kubectl semaphore check`.
func newCheck(o *options) *cobra.Command {
	var opts check.Options
	var output *outputFormat
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Check the Semaphore controllers of the context's cluster and every remote they read",
		Long:  checkLong + wrapList(check.Names) + ".",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if unknown := check.Unknown(opts.Skip); len(unknown) > 0 {
				return usageError{fmt.Errorf("--skip: no check named %s (the checks: %s)", strings.Join(unknown, ", "), strings.Join(check.Names, ", "))}
			}
			cfg, err := o.restConfig("")
			if err != nil {
				return err
			}
			// Dozens of small reads (each component's pods and Secrets, each pod's metrics):
			// not at client-go's default of 5 requests a second.
			cfg.QPS, cfg.Burst = 50, 100
			client, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				return err
			}
			dyn, err := dynamic.NewForConfig(cfg)
			if err != nil {
				return err
			}
			opts.Namespace = o.namespace()
			results, err := check.Run(cmd.Context(), client, dyn, opts)
			if err != nil {
				return unreachable(err)
			}
			if err := output.print(o.out, results, func() error { return check.Print(o.out, results) }); err != nil {
				return err
			}
			if check.Failed(results) {
				return exitError{code: exitProblems}
			}
			return nil
		},
	}
	output = addOutput(cmd, "one line per check")
	cmd.Flags().DurationVar(&opts.Timeout, "remote-timeout", 10*time.Second, "timeout of each read of a pod's metrics, and of each request to a remote cluster (--probe-remotes)")
	cmd.Flags().StringSliceVar(&opts.Skip, "skip", nil, "checks not to run, e.g. reachable,peers where the API server cannot reach the pods (the help lists them)")
	cmd.Flags().BoolVar(&opts.ProbeRemotes, "probe-remotes", false,
		"also connect from this machine to each remote's API server, at the address in the cluster's Secrets and with the pods' credentials: probe-reachable, probe-identity, probe-access (access reviews), mirrors, global-services, network-sets, and peers against the remote's Nodes")
	cmd.Flags().DurationVar(&opts.MaxHandshakeAge, "max-handshake-age", 3*time.Minute, "how old a WireGuard peer's last handshake may be")
	addAllowExec(cmd, &opts.AllowExecPlugins)
	return cmd
}

// wrapList joins items with commas, in lines of at most 96 characters indented by two spaces.
func wrapList(items []string) string {
	var lines []string
	line := ""
	for i, item := range items {
		if i < len(items)-1 {
			item += ","
		}
		if line != "" && len(line)+1+len(item) > 94 {
			lines, line = append(lines, line), ""
		}
		if line != "" {
			line += " "
		}
		line += item
	}
	return "  " + strings.Join(append(lines, line), "\n  ")
}
