package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/link"
)

// unlinkFlags are the flags of unlink: unlink's options for the direction from --from to --to
// (--values-out is ValuesFile, --values-out-dir ValuesDir), the --from context, whether to
// unlink the other direction too, and how long it may take.
type unlinkFlags struct {
	link.UnlinkOptions
	fromContext string
	bothWays    bool
	timeout     time.Duration
	output      *outputFormat
}

// newUnlink is `kubectl semaphore unlink`.
func newUnlink(o *options) *cobra.Command {
	var uf unlinkFlags
	cmd := &cobra.Command{
		Use:   "unlink --to CONTEXT --remote-name NAME",
		Short: "Undo link: delete the consumer's copy of a remote's token, and the remote's values",
		Long: `unlink undoes link for the remote --remote-name (default: the --from context's name) and the
consuming cluster of --to: it deletes the Secret semaphore-remote-<remote> that link made in the
semaphore release's namespace of --to (--namespace, default semaphore), and takes the remote's
global.remotes entry and its port in wireguard.listenPorts out of the consumer's values file
--values-out (or <--values-out-dir>/<consumer>.yaml), keeping the file's other values and
comments. What is already gone is not an error: unlink says there is nothing to remove, and can
be run again.

unlink deletes only the Secret link made: one labelled semaphore.uw.io/linked-remote=<remote>
(as link labels the Secret it creates), or, made by an older link, labelled
app.kubernetes.io/part-of=semaphore by link's field manager kubectl-semaphore. A Secret of that
name made otherwise (by hand, as semaphore-remote's NOTES show) is refused and left alone, and
nothing is removed.

The consumer's name, which names the values file in --values-out-dir and must be the file's
global.clusterName, is --to-cluster, else global.clusterName of the semaphore release in --to
(with --both-ways: the --to context's name). --both-ways unlinks --to from --from as well, in
--values-out-dir's file of each cluster. Every direction is read and checked before anything is
deleted or written.

Then run helm upgrade on the semaphore release in --to with the edited values file, so that it
stops reading the remote: until then, a pod of it that starts cannot mount the deleted Secret.
unlink does not revoke the token: it stays valid until the remote's semaphore-remote no longer
has the consumer. Uninstalling semaphore-remote in the remote cluster, or taking the consumer out
of its consumers (helm upgrade), deletes the consumer's ServiceAccount and token Secrets, which
revokes it.`,
		Example: `  # gcp no longer reads aws: the token's copy and aws's values out of gcp.yaml
  kubectl semaphore unlink --remote-name aws --to gcp --to-cluster gcp --values-out gcp.yaml
  helm upgrade semaphore oci://ghcr.io/kube-semaphore/charts/semaphore -n semaphore \
    --kube-context gcp -f gcp.yaml

  # aws and gcp no longer read each other: values/aws.yaml and values/gcp.yaml
  kubectl semaphore unlink --from aws --to gcp --both-ways --values-out-dir values`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return uf.run(cmd.Context(), o) },
	}
	uf.add(cmd)
	uf.output = addOutput(cmd, "what unlink did, as text")
	return cmd
}

// add adds unlink's flags to cmd.
func (uf *unlinkFlags) add(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&uf.fromContext, "from", "", "kubeconfig context of the remote cluster: the default --remote-name; read only with --both-ways")
	f.StringVar(&uf.ToContext, "to", "", "kubeconfig context of the consuming cluster (where the semaphore release runs)")
	f.StringVar(&uf.RemoteName, "remote-name", "", "the remote cluster's name, as the consumer knows it (the name of its global.remotes entry and token Secret; default: the --from context's name)")
	f.StringVar(&uf.ToCluster, "to-cluster", "", "the consuming cluster's name, for its values file (default: global.clusterName of the semaphore release in --to; with --both-ways, the --to context's name)")
	f.StringVar(&uf.ValuesFile, "values-out", "", "take the remote out of this values file of the consumer's (its other values and comments are kept)")
	f.StringVar(&uf.ValuesDir, "values-out-dir", "", "take the remote out of <dir>/<consumer>.yaml (with --both-ways: one file per cluster)")
	f.BoolVar(&uf.bothWays, "both-ways", false, "unlink --to from --from as well, so that neither cluster reads the other; needs --from")
	f.DurationVar(&uf.timeout, "timeout", 30*time.Second, "how long unlink may take (twice that with --both-ways)")
}

// run unlinks the clusters of the flags and says what it did, as text or as -o says.
func (uf unlinkFlags) run(ctx context.Context, o *options) error {
	unlinks, err := uf.unlinks(o)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Duration(len(unlinks))*uf.timeout)
	defer cancel()
	results, err := link.Unlink(ctx, unlinks...)
	// The remote's context of each direction: --from's (when given), and --to's on the way back.
	froms := []string{uf.fromContext, uf.ToContext}
	done := []unlinked{}
	for i, res := range results {
		done = append(done, unlinkedOf(unlinks[i], froms[i], res))
	}
	text := func() error {
		for _, u := range done {
			u.report(o)
		}
		return nil
	}
	if perr := uf.output.print(o.out, done, text); perr != nil {
		return perr
	}
	return err
}

// unlinks are the unlinks of the flags: from --from to --to, and back with --both-ways.
func (uf unlinkFlags) unlinks(o *options) ([]link.UnlinkOptions, error) {
	there := uf.UnlinkOptions
	if there.RemoteName == "" {
		there.RemoteName = uf.fromContext
	}
	if err := uf.check(there.RemoteName); err != nil {
		return nil, usageError{err}
	}
	var err error
	if there.To, err = linkClient(o, there.ToContext); err != nil {
		return nil, fmt.Errorf("--to %s: %w", there.ToContext, err)
	}
	there.Namespace = o.namespace()
	if !uf.bothWays {
		return []link.UnlinkOptions{there}, nil
	}
	if there.ToCluster == "" {
		there.ToCluster = there.ToContext
	}
	back := there
	if back.To, err = linkClient(o, uf.fromContext); err != nil {
		return nil, fmt.Errorf("--from %s: %w", uf.fromContext, err)
	}
	back.ToContext, back.RemoteName, back.ToCluster = uf.fromContext, there.ToCluster, there.RemoteName
	return []link.UnlinkOptions{there, back}, nil
}

// check refuses flags that do not go together; remote is the remote's name they give.
func (uf unlinkFlags) check(remote string) error {
	switch {
	case uf.ToContext == "":
		return errors.New("unlink needs --to, the kubeconfig context of the consuming cluster")
	case remote == "":
		return errors.New("unlink needs --remote-name, the remote the consumer stops reading (or --from, whose context's name is the default)")
	case uf.bothWays && uf.fromContext == "":
		return errors.New("--both-ways unlinks --to from --from as well: give --from")
	case uf.fromContext == uf.ToContext:
		return fmt.Errorf("--from and --to are both %s: a cluster does not read from itself", uf.ToContext)
	case uf.ValuesFile != "" && uf.ValuesDir != "":
		return errors.New("--values-out and --values-out-dir both name the values file: give one")
	case uf.bothWays && uf.ValuesFile != "":
		return errors.New("--both-ways edits the values of both clusters, one file each: give --values-out-dir, not --values-out")
	}
	for flag, name := range map[string]string{"--remote-name": remote, "--to-cluster": uf.ToCluster} {
		if errs := validation.IsDNS1123Label(name); name != "" && len(errs) > 0 {
			return fmt.Errorf("%s %q is no cluster's name: %s", flag, name, strings.Join(errs, "; "))
		}
	}
	return nil
}

// unlinked is what unlink did for one direction, as -o prints it.
type unlinked struct {
	// From and To are the contexts of the remote (when given) and of the consumer.
	From     string `json:"from,omitempty"`
	To       string `json:"to"`
	Remote   string `json:"remote"`
	Consumer string `json:"consumer,omitempty"`
	// Secret is the consumer's copy of the token (namespace/name in To), and Action what unlink
	// did to it: deleted, or absent (there was none).
	Secret string `json:"secret"`
	Action string `json:"action"`
	// ValuesFile is the values file the remote was taken out of, and ValuesChanged whether it
	// was written; Entry and ListenPort are the remote's entry and port it had.
	ValuesFile    string      `json:"valuesFile,omitempty"`
	ValuesChanged bool        `json:"valuesChanged,omitempty"`
	Entry         *link.Entry `json:"entry,omitempty"`
	ListenPort    *int        `json:"listenPort,omitempty"`
	Notes         []string    `json:"notes,omitempty"`
}

// unlinkedOf is what res did for uo; from is the remote's context, "" when not given.
func unlinkedOf(uo link.UnlinkOptions, from string, res *link.Unlinked) unlinked {
	u := unlinked{
		From: from, To: uo.ToContext, Remote: res.Remote, Consumer: res.Consumer, Secret: res.Secret, Action: string(res.Action),
		ValuesFile: res.ValuesFile, ValuesChanged: res.ValuesChanged, Entry: res.Entry, Notes: res.Notes,
	}
	if res.HadPort {
		u.ListenPort = &res.ListenPort
	}
	return u
}

// report says on o.out what u did.
func (u unlinked) report(o *options) {
	secret := "deleted"
	if u.Action != "deleted" {
		secret = "none, nothing to remove"
	}
	fmt.Fprintf(o.out, "Secret %s in context %s: %s\n", u.Secret, u.To, secret)
	if u.ValuesFile != "" {
		var removed []string
		if u.Entry != nil {
			removed = append(removed, "global.remotes entry "+u.Remote)
		}
		if u.ListenPort != nil {
			removed = append(removed, fmt.Sprintf("wireguard.listenPorts.%s=%d", u.Remote, *u.ListenPort))
		}
		if len(removed) == 0 {
			fmt.Fprintf(o.out, "%s: no global.remotes entry %s nor wireguard.listenPorts.%[2]s, nothing to remove\n", u.ValuesFile, u.Remote)
		} else {
			fmt.Fprintf(o.out, "%s in %s: removed\n", strings.Join(removed, " and "), u.ValuesFile)
		}
	}
	for _, note := range u.Notes {
		fmt.Fprintln(o.out, note)
	}
}
