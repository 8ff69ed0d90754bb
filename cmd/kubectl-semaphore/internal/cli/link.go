package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/link"
)

// linkFlags are the flags of link: link's options (--values-out is ValuesFile), and how long
// it may take besides waiting for a token.
type linkFlags struct {
	link.Options
	timeout time.Duration
}

// newLink is `kubectl semaphore link`.
func newLink(o *options) *cobra.Command {
	var lf linkFlags
	cmd := &cobra.Command{
		Use:   "link --from CONTEXT --to CONTEXT",
		Short: "Hand a consuming cluster the credentials semaphore-remote made for it",
		Long: `link reads what semaphore-remote made in the cluster of --from for the consumer that is the
cluster of --to (its token, the CA, the API server address), checks from here that the server
takes the token, writes the token into the Secret semaphore-remote-<from cluster> of the
semaphore release's namespace in --to (--namespace, default semaphore; created or updated, not
written when equal), and prints the global.remotes entry for that release's values, or puts it
into the values file --values-out (keeping the file's other remotes and values). The entry's
podRanges, the ranges the remote's pod addresses must lie in, hold the pod CIDRs of the Nodes of
--from: widen them if the remote's pod range is larger.

The remote's name is --remote-name (default: the --from context's name): link refuses a remote
whose semaphore-remote calls itself otherwise, since the name decides which Secret and entry it
writes. It refuses too, unless --force, to hand out a server or CA other than those the values
file or the semaphore release in --to already has under that name.

The consumer's name is --to-cluster, or else global.clusterName of the semaphore release in --to.
Run it again after a token rotation: it updates the Secret.`,
		Example: `  kubectl semaphore link --from aws --remote-name aws --to gcp --to-cluster gcp --values-out gcp-remotes.yaml
  helm upgrade --install semaphore oci://registry.example.net/charts/semaphore -n semaphore \
    --kube-context gcp --set global.clusterName=gcp -f gcp-remotes.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return lf.run(cmd.Context(), o) },
	}
	f := cmd.Flags()
	f.StringVar(&lf.FromContext, "from", "", "kubeconfig context of the cluster semaphore-remote runs in")
	f.StringVar(&lf.ToContext, "to", "", "kubeconfig context of the consuming cluster (where the semaphore release runs)")
	f.StringVar(&lf.ToCluster, "to-cluster", "", "the consuming cluster's name, as in semaphore-remote's consumers (default: global.clusterName of the semaphore release in --to)")
	f.StringVar(&lf.RemoteNamespace, "remote-namespace", "", "namespace of the semaphore-remote release in --from (default: found in any namespace)")
	f.StringVar(&lf.ValuesFile, "values-out", "", "put the global.remotes entry into this values file instead of printing it (other entries and values are kept)")
	f.DurationVar(&lf.Wait, "wait", 0, "how long to wait for the token controller to fill a new token (default: not at all)")
	f.BoolVar(&lf.SkipReachabilityCheck, "skip-reachability-check", false, "do not check from here that the remote's API server takes the token (when only the consumer's pods reach it)")
	f.StringVar(&lf.RemoteName, "remote-name", "", "the remote cluster's name, as the consumer knows it (the name of its global.remotes entry and token Secret); link refuses a remote whose semaphore-remote says another (default: the --from context's name)")
	f.BoolVar(&lf.Force, "force", false, "hand out a server or CA other than those the values file or the semaphore release in --to has for the remote's name (the remote moved)")
	f.DurationVar(&lf.timeout, "timeout", 30*time.Second, "how long link may take, besides --wait")
	return cmd
}

// run links the clusters of the flags, says on o.errOut what it did, and writes the entry to
// the values file or prints it.
func (lf linkFlags) run(ctx context.Context, o *options) error {
	lo := lf.Options
	if lo.FromContext == "" || lo.ToContext == "" {
		return errors.New("link needs --from and --to, the kubeconfig contexts of the remote cluster and of the consuming one")
	}
	if lo.FromContext == lo.ToContext {
		return fmt.Errorf("--from and --to are both %s: a cluster does not read from itself", lo.FromContext)
	}
	var err error
	if lo.From, err = linkClient(o, lo.FromContext); err != nil {
		return fmt.Errorf("--from %s: %w", lo.FromContext, err)
	}
	if lo.To, err = linkClient(o, lo.ToContext); err != nil {
		return fmt.Errorf("--to %s: %w", lo.ToContext, err)
	}
	if o.flags.Namespace != nil {
		lo.Namespace = *o.flags.Namespace
	}
	if lo.RemoteName == "" {
		lo.RemoteName = lo.FromContext
	}
	ctx, cancel := context.WithTimeout(ctx, lf.timeout+lo.Wait)
	defer cancel()
	res, err := link.Run(ctx, lo)
	if err != nil {
		return err
	}
	fmt.Fprintf(o.errOut, "Secret %s in context %s: %s (the token of consumer %s from semaphore-remote %s/%s in context %s)\n",
		res.Secret, lo.ToContext, res.Action, res.Consumer, res.Remote.Namespace, res.Remote.Release, lo.FromContext)
	for _, note := range res.Notes {
		fmt.Fprintln(o.errOut, note)
	}
	if lo.ValuesFile != "" {
		changed, err := link.WriteValues(lo.ValuesFile, res.Entry)
		if err != nil {
			return err
		}
		what := "unchanged"
		if changed {
			what = "written"
		}
		fmt.Fprintf(o.errOut, "global.remotes entry %s in %s: %s\n", res.Entry.Name, lo.ValuesFile, what)
		return nil
	}
	data, err := link.Values(res.Entry)
	if err != nil {
		return err
	}
	_, err = o.out.Write(data)
	return err
}

// linkClient is a client of context whose requests say they come from link (in audit logs).
func linkClient(o *options, context string) (kubernetes.Interface, error) {
	cfg, err := o.restConfig(context)
	if err != nil {
		return nil, err
	}
	cfg.UserAgent = link.UserAgent
	return kubernetes.NewForConfig(cfg)
}
