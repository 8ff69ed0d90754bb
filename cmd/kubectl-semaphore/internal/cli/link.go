package cli

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/link"
)

// linkFlags are the flags of link: link's options for the direction from --from to --to
// (--values-out is ValuesFile, --values-out-dir ValuesDir, --pod-ranges PodRanges), whether
// to link the other direction too and its pod ranges, and how long it may take besides
// waiting for a token.
type linkFlags struct {
	link.Options
	bothWays    bool
	toPodRanges []string
	timeout     time.Duration
	output      *outputFormat
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
written when equal), and gives the values that release needs to read the remote and reach its
nodes: global.clusterName (the consumer's name), the remote's global.remotes entry, and its
WireGuard port in wireguard.listenPorts. It prints them, or puts them into the values file
--values-out (or <--values-out-dir>/<consumer>.yaml), keeping the file's other remotes and
values, so that helm install -f <that file> needs nothing else. The port is --listen-port, else
the one the file already gives the remote, else the first from 51821 that no other remote in the
file has. The entry's podRanges, the ranges the remote's pod addresses must lie in, are
--pod-ranges, else the pod CIDRs of the Nodes of --from and its Calico IP pools: widen them if
the remote's pod range is larger.

WireGuard needs each cluster to reach the other: --both-ways links --from to --to and --to to
--from in one command (semaphore-remote installed in both, each listing the other as a
consumer), writing each consumer's values into --values-out-dir, each port chosen in its own
file (--listen-port gives both ends the same). Both directions are checked before either is
written.

The remote's name is --remote-name (default: the --from context's name): link refuses a remote
whose semaphore-remote calls itself otherwise, since the name decides which Secret and entry it
writes. It refuses too, unless --force, to hand out a server or CA other than those the values
file or the semaphore release in --to already has under that name.

The consumer's name is --to-cluster, or else global.clusterName of the semaphore release in --to
(with --both-ways: the --to context's name), which a first link, before that release exists,
does not have. Run it again after a token rotation: it updates the Secret.`,
		Example: `  # gcp reads aws: its token into gcp, and gcp's values for aws into gcp.yaml
  kubectl semaphore link --from aws --remote-name aws --to gcp --to-cluster gcp --values-out gcp.yaml
  helm upgrade --install semaphore oci://ghcr.io/kube-semaphore/charts/semaphore -n semaphore \
    --kube-context gcp -f gcp.yaml

  # aws and gcp read each other: values/aws.yaml and values/gcp.yaml
  kubectl semaphore link --from aws --to gcp --both-ways --values-out-dir values`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return lf.run(cmd.Context(), o) },
	}
	lf.add(cmd)
	lf.output = addOutput(cmd, "the values, or nothing with --values-out; what link did goes to standard error either way")
	return cmd
}

// add adds link's flags to cmd.
func (lf *linkFlags) add(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&lf.FromContext, "from", "", "kubeconfig context of the cluster semaphore-remote runs in")
	f.StringVar(&lf.ToContext, "to", "", "kubeconfig context of the consuming cluster (where the semaphore release runs)")
	f.StringVar(&lf.ToCluster, "to-cluster", "", "the consuming cluster's name, as in semaphore-remote's consumers (default: global.clusterName of the semaphore release in --to; with --both-ways, the --to context's name)")
	f.StringVar(&lf.RemoteNamespace, "remote-namespace", "", "namespace of the semaphore-remote release in --from (and in --to with --both-ways; default: found in any namespace)")
	f.StringVar(&lf.ValuesFile, "values-out", "", "put the values into this values file of the consumer's instead of printing them (its other remotes and values are kept)")
	f.StringVar(&lf.ValuesDir, "values-out-dir", "", "put the values into <dir>/<consumer>.yaml, created with the directory when missing (needed by --both-ways: one file per cluster)")
	f.IntVar(&lf.ListenPort, "listen-port", 0, "the remote's WireGuard UDP port in the consumer's wireguard.listenPorts, 1024-65535 (default: the values file's, else the first free one from 51821)")
	f.StringSliceVar(&lf.PodRanges, "pod-ranges", nil, "the remote's podRanges, CIDRs separated by commas (default: proposed from the Nodes' pod CIDRs and Calico IP pools of --from)")
	f.BoolVar(&lf.bothWays, "both-ways", false, "link --to to --from as well, so that each cluster reads the other (WireGuard needs both); needs --values-out-dir")
	f.StringSliceVar(&lf.toPodRanges, "to-pod-ranges", nil, "with --both-ways, the podRanges of --to as --from reads it (default: proposed from --to)")
	f.DurationVar(&lf.Wait, "wait", 0, "how long to wait for the token controller to fill a new token (default: not at all)")
	f.BoolVar(&lf.SkipReachabilityCheck, "skip-reachability-check", false, "do not check from here that the remote's API server takes the token (when only the consumer's pods reach it)")
	f.StringVar(&lf.RemoteName, "remote-name", "", "the remote cluster's name, as the consumer knows it (the name of its global.remotes entry and token Secret); link refuses a remote whose semaphore-remote says another (default: the --from context's name)")
	f.BoolVar(&lf.Force, "force", false, "hand out a server or CA other than those the values file or the semaphore release in --to has for the remote's name (the remote moved)")
	f.DurationVar(&lf.timeout, "timeout", 30*time.Second, "how long link may take, besides --wait (twice that with --both-ways)")
}

// run links the clusters of the flags, says on o.errOut what it did, and writes the values to
// the values files or prints them; with -o, it prints what it did of each link instead.
func (lf linkFlags) run(ctx context.Context, o *options) error {
	links, err := lf.links(o)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Duration(len(links))*(lf.timeout+lf.Wait))
	defer cancel()
	results, err := link.Run(ctx, links...)
	done := []linked{}
	for i, res := range results {
		report(o, links[i], res)
		l, lerr := linkedOf(links[i], res)
		if lerr != nil {
			return lerr
		}
		done = append(done, l)
	}
	if perr := lf.output.print(o.out, done, func() error { return printValues(o, results) }); perr != nil {
		return perr
	}
	return err
}

// links are the links of the flags: from --from to --to, and back with --both-ways.
func (lf linkFlags) links(o *options) ([]link.Options, error) {
	there := lf.Options
	if err := lf.check(); err != nil {
		return nil, usageError{err}
	}
	var err error
	if there.From, err = linkClient(o, there.FromContext); err != nil {
		return nil, fmt.Errorf("--from %s: %w", there.FromContext, err)
	}
	if there.To, err = linkClient(o, there.ToContext); err != nil {
		return nil, fmt.Errorf("--to %s: %w", there.ToContext, err)
	}
	there.Namespace = o.namespace()
	if there.RemoteName == "" {
		there.RemoteName = there.FromContext
	}
	if !lf.bothWays {
		return []link.Options{there}, nil
	}
	if there.ToCluster == "" {
		there.ToCluster = there.ToContext
	}
	back := there
	back.From, back.To, back.FromContext, back.ToContext = there.To, there.From, there.ToContext, there.FromContext
	back.RemoteName, back.ToCluster = there.ToCluster, there.RemoteName
	back.PodRanges = lf.toPodRanges
	return []link.Options{there, back}, nil
}

// check refuses flags that do not go together, and values the chart would refuse.
func (lf linkFlags) check() error {
	switch {
	case lf.FromContext == "" || lf.ToContext == "":
		return errors.New("link needs --from and --to, the kubeconfig contexts of the remote cluster and of the consuming one")
	case lf.FromContext == lf.ToContext:
		return fmt.Errorf("--from and --to are both %s: a cluster does not read from itself", lf.FromContext)
	case lf.ValuesFile != "" && lf.ValuesDir != "":
		return errors.New("--values-out and --values-out-dir both name where the values go: give one")
	case lf.bothWays && lf.ValuesDir == "":
		return errors.New("--both-ways writes the values of both clusters, one file each: give --values-out-dir")
	case !lf.bothWays && len(lf.toPodRanges) > 0:
		return errors.New("--to-pod-ranges are the ranges of --to as --from reads it: they need --both-ways")
	case lf.ListenPort != 0 && (lf.ListenPort < 1024 || lf.ListenPort > 65535):
		return fmt.Errorf("--listen-port %d: the chart takes 1024-65535 (semaphore-wireguard has no capability to bind lower ports)", lf.ListenPort)
	}
	for flag, ranges := range map[string][]string{"--pod-ranges": lf.PodRanges, "--to-pod-ranges": lf.toPodRanges} {
		for _, r := range ranges {
			if p, err := netip.ParsePrefix(r); err != nil || p.Masked() != p {
				return fmt.Errorf("%s: %q is not a CIDR (an address range such as 10.10.0.0/16)", flag, r)
			}
		}
	}
	return nil
}

// report says on o.errOut what res did.
func report(o *options, lo link.Options, res *link.Result) {
	fmt.Fprintf(o.errOut, "Secret %s in context %s: %s (the token of consumer %s from semaphore-remote %s/%s in context %s)\n",
		res.Secret, lo.ToContext, res.Action, res.Consumer, res.Remote.Namespace, res.Remote.Release, lo.FromContext)
	for _, note := range res.Notes {
		fmt.Fprintln(o.errOut, note)
	}
	if res.ValuesFile == "" {
		return
	}
	what := "unchanged"
	if res.ValuesChanged {
		what = "written"
	}
	fmt.Fprintf(o.errOut, "global.remotes entry %s and wireguard.listenPorts.%s=%d in %s: %s\n", res.Entry.Name, res.Entry.Name, res.ListenPort, res.ValuesFile, what)
}

// printValues prints the values of the results that went to no values file.
func printValues(o *options, results []*link.Result) error {
	for _, res := range results {
		if res.ValuesFile == "" {
			if _, err := o.out.Write(res.Values); err != nil {
				return err
			}
		}
	}
	return nil
}

// linked is what link did for one direction, as -o prints it.
type linked struct {
	// From and To are the contexts of the remote and of the consumer.
	From string `json:"from"`
	To   string `json:"to"`
	// RemoteRelease is the semaphore-remote release, namespace/name, in From.
	RemoteRelease string `json:"remoteRelease"`
	Consumer      string `json:"consumer"`
	// Secret is the consumer's copy of the token (namespace/name in To), and Action what link
	// did to it: created, updated or unchanged.
	Secret string `json:"secret"`
	Action string `json:"action"`
	// Entry is the remote's global.remotes entry, ListenPort its wireguard.listenPorts port.
	Entry      link.Entry `json:"entry"`
	ListenPort int        `json:"listenPort"`
	// ValuesFile is the values file the values went to, and ValuesChanged whether it was
	// written; without one, Values are the values the consumer's release needs.
	ValuesFile    string         `json:"valuesFile,omitempty"`
	ValuesChanged bool           `json:"valuesChanged,omitempty"`
	Values        map[string]any `json:"values,omitempty"`
	Notes         []string       `json:"notes,omitempty"`
}

func linkedOf(lo link.Options, res *link.Result) (linked, error) {
	l := linked{
		From: lo.FromContext, To: lo.ToContext, RemoteRelease: res.Remote.Namespace + "/" + res.Remote.Release,
		Consumer: res.Consumer, Secret: res.Secret, Action: string(res.Action), Entry: res.Entry, ListenPort: res.ListenPort,
		ValuesFile: res.ValuesFile, ValuesChanged: res.ValuesChanged, Notes: res.Notes,
	}
	if res.ValuesFile == "" {
		if err := yaml.Unmarshal(res.Values, &l.Values); err != nil {
			return linked{}, fmt.Errorf("the values link made: %w", err)
		}
	}
	return l, nil
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
