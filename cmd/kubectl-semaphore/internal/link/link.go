// Package link hands a consuming cluster the credentials that semaphore-remote made for it in a
// remote cluster: it reads the release's link ConfigMap (this cluster's name and API server as
// the consumers know them) and the consumer's token Secret there, checks from where it runs that
// the server takes the token, writes the token into the Secret the consumer's semaphore release
// reads, and puts what that release needs to read the remote and reach its nodes (its own name,
// the remote's global.remotes entry and WireGuard listen port) into the release's values file,
// or returns it. It does what semaphore-remote's NOTES.txt tells a user to do by hand, and writes
// only what differs. Several links (both directions between two clusters) are all checked
// before any is written. Unlink undoes a link: it deletes the Secret link made and takes the
// remote out of the values file.
package link

import (
	"context"
	"encoding/base64"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
)

// Labels and keys shared with charts/semaphore-remote and charts/semaphore.
const (
	// remoteLinkLabel marks semaphore-remote's link ConfigMap (value "true").
	remoteLinkLabel = "semaphore.uw.io/remote-link"
	// consumerLabel names the consumer of semaphore-remote's per-consumer objects.
	consumerLabel = "semaphore.uw.io/consumer"
	// tokenLabel says whether a token Secret is the consumer's current token or the previous
	// one, kept valid during a rotation (previousToken); link hands out the current one.
	tokenLabel    = "semaphore.uw.io/token"
	previousToken = "previous"
	// instanceLabel is the Helm release of an object.
	instanceLabel = "app.kubernetes.io/instance"
	// partOfLabel is the label of what belongs to Semaphore (value partOf).
	partOfLabel = "app.kubernetes.io/part-of"
	partOf      = "semaphore"
	// linkedRemoteLabel marks the Secret link made for a remote's token, naming the remote: what
	// Unlink may delete.
	linkedRemoteLabel = "semaphore.uw.io/linked-remote"
	// TokenKey is the key of the token in the consumer's Secret (global.remotes[].tokenSecret.key).
	TokenKey = "token"
	// localClusterEnv is the variable in which the semaphore release's controllers get the name
	// of their cluster (global.clusterName).
	localClusterEnv = "SEMAPHORE_LOCAL_CLUSTER"
	// defaultNamespace is the namespace of the semaphore release the docs install.
	defaultNamespace = "semaphore"
)

// Options say what to link: one direction, the consumer To reading the remote From.
type Options struct {
	// From is the cluster semaphore-remote runs in; To the consuming cluster. FromContext and
	// ToContext name them in messages.
	From, To               kubernetes.Interface
	FromContext, ToContext string
	// RemoteNamespace narrows the search for semaphore-remote in From ("" for every namespace).
	RemoteNamespace string
	// Namespace is the namespace of the semaphore release in To, where the token goes.
	Namespace string
	// ToCluster is the name of To as semaphore-remote's consumers list it; "" to read it from
	// the semaphore release in Namespace (its controllers' SEMAPHORE_LOCAL_CLUSTER).
	ToCluster string
	// Wait is how long to wait for the token controller to fill the token (0: not at all).
	Wait time.Duration
	// SkipReachabilityCheck skips calling the server with the token before writing it.
	SkipReachabilityCheck bool
	// RemoteName is the name the user expects the remote to have; a remote whose
	// semaphore-remote says another is refused.
	RemoteName string
	// ValuesFile is the consumer's values file the values go to ("" for none: they are
	// returned to print): an entry of the same name there must have the same server and CA, as
	// must the semaphore release in To. ValuesDir, when ValuesFile is "", names it
	// <ValuesDir>/<consumer>.yaml.
	ValuesFile, ValuesDir string
	// ListenPort is the remote's UDP port in the consumer's wireguard.listenPorts; 0 for the
	// one the values file gives it, else the first free one from FirstListenPort.
	ListenPort int
	// PodRanges are the remote's podRanges; none to propose them from its Nodes and Calico IP
	// pools.
	PodRanges []string
	// Force lets the entry's server or CA differ from those the consumer has for the name.
	Force bool
}

// Remote is a semaphore-remote release as its link ConfigMap describes it.
type Remote struct {
	Namespace, Release string
	// clusterName and apiServer are the remote cluster's name and API server URL as the
	// consumers know them (the chart's clusterName and apiServer).
	clusterName, apiServer string
	consumers              []string
}

// Action is what Run or Unlink did to the consumer's token Secret.
type Action string

// The Actions: Run's, and Unlink's (deleted, or absent: there was none).
const (
	created   Action = "created"
	updated   Action = "updated"
	unchanged Action = "unchanged"
	deleted   Action = "deleted"
	absent    Action = "absent"
)

// Result is what Run did and the values it made.
type Result struct {
	Remote   *Remote
	Consumer string
	// Secret is the namespace/name of the token Secret in the consumer's cluster.
	Secret string
	Action Action
	Entry  Entry
	// ListenPort is the remote's port in the consumer's wireguard.listenPorts.
	ListenPort int
	// ValuesFile is the values file the values went to, and ValuesChanged whether it was
	// written; without one, Values are the consumer's values for the remote, to print.
	ValuesFile    string
	ValuesChanged bool
	Values        []byte
	// Notes are what the user should know about Entry, such as where its podRanges come from.
	Notes []string
}

// Entry is one item of the semaphore umbrella's global.remotes.
type Entry struct {
	Name        string    `json:"name"`
	Server      string    `json:"server"`
	CAData      string    `json:"caData,omitempty"`
	PodRanges   []string  `json:"podRanges,omitempty"`
	TokenSecret SecretKey `json:"tokenSecret"`
}

// SecretKey names a key of a Secret in the release namespace.
type SecretKey struct {
	Name string `json:"name"`
	Key  string `json:"key"`
}

// SecretName is the name of the consumer's copy of the token of remote cluster remote, the one
// semaphore-remote's NOTES name.
func SecretName(remote string) string { return "semaphore-remote-" + remote }

// Run links each of links. Every link is read and checked before anything is written to any
// cluster or file, so that a link that cannot be made (one direction of two, say) leaves
// everything as it was. It returns the results of the links written, in order, with the error
// of the first that could not be.
func Run(ctx context.Context, links ...Options) ([]*Result, error) {
	return checkThenWrite[Options, *Result](ctx, links, prepare)
}

// step is what is to be written for one of several options, read and checked.
type step[R any] interface {
	// apply writes it, and returns what it did.
	apply(ctx context.Context) (R, error)
}

// checkThenWrite prepares a step for each of opts, reading and checking without writing, then
// applies them in order: when one cannot be prepared, nothing is written. It returns what the
// steps applied did, in order, with the error of the first that could not be applied.
func checkThenWrite[O, R any, S step[R]](ctx context.Context, opts []O, prepare func(context.Context, O) (S, error)) ([]R, error) {
	steps := make([]S, len(opts))
	for i, o := range opts {
		s, err := prepare(ctx, o)
		if err != nil {
			return nil, err
		}
		steps[i] = s
	}
	var results []R
	for _, s := range steps {
		r, err := s.apply(ctx)
		if err != nil {
			return results, err
		}
		results = append(results, r)
	}
	return results, nil
}

// plan is a link read and checked, and what it will write.
type plan struct {
	o     Options
	token []byte
	// values are the consumer's values, for its values file or to print.
	values *consumerValues
	res    *Result
}

// prepare reads what o links and checks it, writing nothing.
func prepare(ctx context.Context, o Options) (*plan, error) {
	if o.Namespace == "" {
		o.Namespace = defaultNamespace
	}
	remote, err := findRemote(ctx, o.From, o.RemoteNamespace)
	if err != nil {
		return nil, fmt.Errorf("context %s: %w", o.FromContext, err)
	}
	where := fmt.Sprintf("semaphore-remote in context %s (release %s/%s)", o.FromContext, remote.Namespace, remote.Release)
	if err := remote.checkComplete(where); err != nil {
		return nil, err
	}
	if err := checkName(o, remote, where); err != nil {
		return nil, err
	}
	consumer, err := consumerOf(ctx, o, remote, where)
	if err != nil {
		return nil, err
	}
	o.ValuesFile = valuesPath(o.ValuesFile, o.ValuesDir, consumer)
	token, ca, err := consumerToken(ctx, o.From, remote, consumer, o.Wait)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	if !o.SkipReachabilityCheck {
		if err := checkServer(ctx, remote, consumer, ca, token, where); err != nil {
			return nil, err
		}
	}
	notes, err := checkSameRemote(ctx, o, remote, ca, where)
	if err != nil {
		return nil, err
	}
	name := SecretName(remote.clusterName)
	res := &Result{
		Remote:   remote,
		Consumer: consumer,
		Secret:   o.Namespace + "/" + name,
		Entry: Entry{
			Name:        remote.clusterName,
			Server:      remote.apiServer,
			CAData:      base64.StdEncoding.EncodeToString(ca),
			TokenSecret: SecretKey{Name: name, Key: TokenKey},
		},
		ValuesFile: o.ValuesFile,
		Notes:      notes,
	}
	res.podRanges(ctx, o)
	p := &plan{o: o, token: token, res: res}
	if err := p.planValues(); err != nil {
		return nil, err
	}
	return p, nil
}

// planValues makes the consumer's values for the remote, from its values file when it has one.
func (p *plan) planValues() error {
	o, res := p.o, p.res
	var err error
	if p.values, err = planValues(o.ValuesFile, res.Consumer, res.Entry, o.ListenPort); err != nil {
		return err
	}
	res.ListenPort = p.values.port
	if o.ValuesFile == "" && o.ListenPort == 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("wireguard.listenPorts gives %s port %d: each remote of the release in context %s needs a port of its own, so choose another (--listen-port) if it has that one, or let link choose with the release's values file (--values-out)",
			res.Entry.Name, res.ListenPort, o.ToContext))
	}
	return nil
}

// apply writes the token into the consumer's Secret, and the values into its values file.
func (p *plan) apply(ctx context.Context) (*Result, error) {
	o, res := p.o, p.res
	name := res.Entry.TokenSecret.Name
	var err error
	if res.Action, err = ensureToken(ctx, o.To, o.Namespace, res.Entry.Name, p.token); err != nil {
		return nil, fmt.Errorf("context %s: writing the token to Secret %s/%s: %w", o.ToContext, o.Namespace, name, err)
	}
	if o.ValuesFile == "" {
		res.Values = p.values.out
		return res, nil
	}
	if res.ValuesChanged, err = p.values.write(); err != nil {
		return nil, err
	}
	return res, nil
}

// valuesPath is the consumer's values file: file, else <dir>/<consumer>.yaml, else none ("").
func valuesPath(file, dir, consumer string) string {
	if file == "" && dir != "" {
		return filepath.Join(dir, consumer+".yaml")
	}
	return file
}

// podRanges gives the entry the pod ranges of o.From: o.PodRanges, else those PodRanges
// proposes, with a note that says where they come from, or why there are none.
func (res *Result) podRanges(ctx context.Context, o Options) {
	name := res.Remote.clusterName
	if len(o.PodRanges) > 0 {
		res.Entry.PodRanges = o.PodRanges
		res.Notes = append(res.Notes, fmt.Sprintf("podRanges %v of %s: as given", o.PodRanges, name))
		return
	}
	ranges, err := PodRanges(ctx, o.From)
	switch {
	case err != nil:
		res.Notes = append(res.Notes, fmt.Sprintf("context %s: %v: set podRanges of %s yourself", o.FromContext, err, name))
	case len(ranges) == 0:
		res.Notes = append(res.Notes, fmt.Sprintf("context %s: neither a Node with a pod CIDR nor a readable Calico IP pool: set podRanges of %s yourself", o.FromContext, name))
	default:
		res.Entry.PodRanges = ranges
		res.Notes = append(res.Notes, fmt.Sprintf("podRanges %v of %s hold its Nodes' pod CIDRs and enabled Calico IP pools (context %s): widen them if its pod range is larger, or pods of nodes added later are not routed",
			ranges, name, o.FromContext))
	}
}

// UserAgent is link's user agent, in the API servers' audit logs.
const UserAgent = "kubectl-semaphore-link"

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
