package cli

import (
	"context"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/dynamic"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/mesh"
	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/release"
)

// meshFlags are the flags status and graph share.
type meshFlags struct {
	contexts     []string
	timeout      time.Duration
	probeRemotes bool
	allowExec    bool
}

func (f *meshFlags) add(cmd *cobra.Command) {
	addContexts(cmd, &f.contexts, "to show")
	cmd.Flags().DurationVar(&f.timeout, "probe-timeout", 5*time.Second, "how long to wait for each read of a pod's metrics, and with --probe-remotes for each remote's API server")
	cmd.Flags().BoolVar(&f.probeRemotes, "probe-remotes", false,
		"tell whether each remote is reachable by connecting from this machine to its API server, at the address in the cluster's Secrets and with each controller's credentials, instead of from the controllers' metrics")
	addAllowExec(cmd, &f.allowExec)
}

// meshReads is what status and graph read, in their help.
const meshReads = `Whether a remote answers the controllers comes from their own metrics, read through the
API server's pod proxy (remote_up, the user of remote_identity_info, the age of
remote_last_sync_timestamp_seconds): the leader's of replicas that elect one, every agent's of
wireguard. Nothing connects to an address read from the cluster's objects unless --probe-remotes
is given: then this machine connects to each remote's API server, at the address in the cluster's
Secrets, with each controller's credentials, and asks who they are there.`

// addAllowExec adds the flag that lets the remotes' kubeconfigs, read from the clusters'
// Secrets, run programs on this machine.
func addAllowExec(cmd *cobra.Command, allow *bool) {
	cmd.Flags().BoolVar(allow, release.AllowExecPluginsFlag, false,
		"let the remotes' kubeconfigs read from the cluster's Secrets run their exec credential plugins and auth-providers on this machine (whoever may write those Secrets chooses the command)")
}

// collect reads the state of the cluster of every context, in parallel, as onContexts.
func (f *meshFlags) collect(ctx context.Context, o *options) ([]mesh.ClusterState, error) {
	return onContexts(ctx, o, f.contexts, func(ctx context.Context, name string) (mesh.ClusterState, error) {
		st, err := f.collectOne(ctx, o, name)
		st.Context = name
		return st, err
	})
}

func (f *meshFlags) collectOne(ctx context.Context, o *options, name string) (mesh.ClusterState, error) {
	client, cfg, err := o.client(name)
	if err != nil {
		return mesh.ClusterState{}, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return mesh.ClusterState{}, err
	}
	return mesh.Collect(ctx, mesh.Sources{Client: client, Dynamic: dyn, Namespace: o.namespace(), Timeout: f.timeout,
		ProbeRemotes: f.probeRemotes, Credentials: release.CredentialOptions{AllowExecPlugins: f.allowExec}})
}

func newStatus(o *options) *cobra.Command {
	var flags meshFlags
	var output *outputFormat
	cmd := &cobra.Command{
		Use:   "status [--contexts CTX,...]",
		Short: "The mesh at a glance: each cluster's remotes, mirrors, global services, service exports and imports, network sets and WireGuard peers",
		Long: `status shows, for the cluster of each context, what Semaphore made of it: each remote,
whether it answers the controllers, the mirrors and network sets made from it and the WireGuard
peers on its side with their last handshake; the global services and their endpoints by cluster;
where the service mirror serves the Multi-Cluster Services API, the ServiceExports with their
Valid, Ready and Conflict conditions and the ServiceImports it holds with their IPs and
endpoints by source cluster; and whatever could not be read. -n narrows the search for the controllers to one namespace
(default: every namespace).

` + meshReads,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			states, err := flags.collect(cmd.Context(), o)
			if states == nil {
				states = []mesh.ClusterState{}
			}
			if perr := output.print(o.out, states, func() error { return mesh.WriteTables(o.out, states, time.Now()) }); perr != nil {
				return perr
			}
			return err
		},
	}
	flags.add(cmd)
	output = addOutput(cmd, "tables")
	return cmd
}
