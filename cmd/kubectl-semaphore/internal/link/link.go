// Package link hands a consuming cluster the credentials that semaphore-remote made for it in a
// remote cluster: it reads the release's link ConfigMap (this cluster's name and API server as
// the consumers know them) and the consumer's token Secret there, checks from where it runs that
// the server takes the token, writes the token into the Secret the consumer's semaphore release
// reads, and returns the consumer's global.remotes entry. It does what semaphore-remote's
// NOTES.txt tells a user to do by hand, and writes only what differs.
package link

import (
	"context"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Labels and keys shared with charts/semaphore-remote and charts/semaphore.
const (
	// LinkLabel marks semaphore-remote's link ConfigMap (value "true").
	LinkLabel = "semaphore.uw.io/remote-link"
	// ConsumerLabel names the consumer of semaphore-remote's per-consumer objects.
	ConsumerLabel = "semaphore.uw.io/consumer"
	// TokenLabel says whether a token Secret is the consumer's current token or the previous
	// one, kept valid during a rotation (PreviousToken); link hands out the current one.
	TokenLabel    = "semaphore.uw.io/token"
	PreviousToken = "previous"
	// InstanceLabel is the Helm release of an object.
	InstanceLabel = "app.kubernetes.io/instance"
	// TokenKey is the key of the token in the consumer's Secret (global.remotes[].tokenSecret.key).
	TokenKey = "token"
	// LocalClusterEnv is the variable in which the semaphore release's controllers get the name
	// of their cluster (global.clusterName).
	LocalClusterEnv = "SEMAPHORE_LOCAL_CLUSTER"
	// DefaultNamespace is the namespace of the semaphore release the docs install.
	DefaultNamespace = "semaphore"
)

// Options say what to link.
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
	// ValuesFile is the values file the entry will go to ("" for none): an entry of the same
	// name there must have the same server and CA, as must the semaphore release in To.
	ValuesFile string
	// Force lets the entry's server or CA differ from those the consumer has for the name.
	Force bool
}

// Remote is a semaphore-remote release as its link ConfigMap describes it.
type Remote struct {
	Namespace, Release string
	// ClusterName and APIServer are the remote cluster's name and API server URL as the
	// consumers know them (the chart's clusterName and apiServer).
	ClusterName, APIServer string
	Consumers              []string
}

// Action is what Link did to the consumer's token Secret.
type Action string

// The Actions.
const (
	Created   Action = "created"
	Updated   Action = "updated"
	Unchanged Action = "unchanged"
)

// Result is what Link did and the entry it made.
type Result struct {
	Remote   *Remote
	Consumer string
	// Secret is the namespace/name of the token Secret in the consumer's cluster.
	Secret string
	Action Action
	Entry  Entry
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

// Link hands o.To the credentials semaphore-remote in o.From made for it.
func Link(ctx context.Context, o Options) (*Result, error) {
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	remote, err := FindRemote(ctx, o.From, o.RemoteNamespace)
	if err != nil {
		return nil, fmt.Errorf("context %s: %w", o.FromContext, err)
	}
	where := fmt.Sprintf("semaphore-remote in context %s (release %s/%s)", o.FromContext, remote.Namespace, remote.Release)
	var unset []string
	if remote.ClusterName == "" {
		unset = append(unset, "clusterName (this cluster's name, as its consumers know it)")
	}
	if remote.APIServer == "" {
		unset = append(unset, "apiServer (its API server URL, as the consumers' pods reach it)")
	}
	if len(unset) > 0 {
		return nil, fmt.Errorf("%s has no %s: set them (helm upgrade %s ... -n %s --reuse-values --set ...) and run link again",
			where, strings.Join(unset, " and no "), remote.Release, remote.Namespace)
	}

	if err := checkName(o, remote, where); err != nil {
		return nil, err
	}

	consumer := o.ToCluster
	if consumer == "" {
		if consumer, err = LocalCluster(ctx, o.To, o.Namespace); err != nil {
			return nil, fmt.Errorf("context %s: %w", o.ToContext, err)
		}
	}
	if !slices.Contains(remote.Consumers, consumer) {
		return nil, fmt.Errorf("%s has no consumer %q (its consumers: %s): add it to the release's consumers (helm upgrade %s ... -n %s --set 'consumers[%d].name=%s', keeping the others) and run link again",
			where, consumer, listOrNone(remote.Consumers), remote.Release, remote.Namespace, len(remote.Consumers), consumer)
	}

	token, ca, err := consumerToken(ctx, o.From, remote, consumer, o.Wait)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	if !o.SkipReachabilityCheck {
		err := Probe(ctx, remote.APIServer, ca, token)
		switch {
		case errors.Is(err, ErrRefused):
			return nil, fmt.Errorf("%s hands consumer %s the server %s, which refuses the consumer's token (401): apiServer names another cluster than this one, or the token was revoked; "+
				"fix the release's apiServer value, or recreate the token (delete Secret %s/%s-token and run helm upgrade), and run link again (--skip-reachability-check skips this check)",
				where, consumer, remote.APIServer, remote.Namespace, SecretName(consumer))
		case err != nil:
			return nil, fmt.Errorf("%s hands consumer %s the server %s, and from here it is not reachable with the consumer's token and CA: %w\n"+
				"Semaphore's controllers in %s must reach that address: fix the release's apiServer value, or, when only the consumer's pods reach it (not this machine), run link with --skip-reachability-check",
				where, consumer, remote.APIServer, err, consumer)
		}
	}

	// Last before the first write: whether the consumer knows this name as another server.
	notes, err := checkSameRemote(ctx, o, remote, ca, where)
	if err != nil {
		return nil, err
	}

	name := SecretName(remote.ClusterName)
	action, err := ensureToken(ctx, o.To, o.Namespace, name, token)
	if err != nil {
		return nil, fmt.Errorf("context %s: writing the token to Secret %s/%s: %w", o.ToContext, o.Namespace, name, err)
	}
	res := &Result{
		Remote:   remote,
		Consumer: consumer,
		Secret:   o.Namespace + "/" + name,
		Action:   action,
		Entry: Entry{
			Name:        remote.ClusterName,
			Server:      remote.APIServer,
			CAData:      base64.StdEncoding.EncodeToString(ca),
			TokenSecret: SecretKey{Name: name, Key: TokenKey},
		},
		Notes: notes,
	}
	ranges, err := PodRanges(ctx, o.From)
	switch {
	case err != nil:
		res.Notes = append(res.Notes, fmt.Sprintf("context %s: %v: set podRanges of %s yourself", o.FromContext, err, remote.ClusterName))
	case len(ranges) == 0:
		res.Notes = append(res.Notes, fmt.Sprintf("context %s: neither a Node with a pod CIDR nor a readable Calico IP pool: set podRanges of %s yourself", o.FromContext, remote.ClusterName))
	default:
		res.Entry.PodRanges = ranges
		res.Notes = append(res.Notes, fmt.Sprintf("podRanges %v of %s hold its Nodes' pod CIDRs and enabled Calico IP pools (context %s): widen them if its pod range is larger, or pods of nodes added later are not routed",
			ranges, remote.ClusterName, o.FromContext))
	}
	return res, nil
}

// FindRemote finds the one semaphore-remote release in namespace ("" for all) by its link
// ConfigMap.
func FindRemote(ctx context.Context, c kubernetes.Interface, namespace string) (*Remote, error) {
	list, err := c.CoreV1().ConfigMaps(namespace).List(ctx, metav1.ListOptions{LabelSelector: LinkLabel + "=true"})
	if err != nil {
		return nil, fmt.Errorf("looking for semaphore-remote: %w", err)
	}
	in := "any namespace"
	if namespace != "" {
		in = "namespace " + namespace
	}
	switch len(list.Items) {
	case 0:
		return nil, fmt.Errorf("no semaphore-remote release in %s (no ConfigMap labelled %s=true): install charts/semaphore-remote there with this cluster's consumers (README, \"Installing with Helm\"), or upgrade a release older than this plugin", in, LinkLabel)
	case 1:
	default:
		var names []string
		for _, cm := range list.Items {
			names = append(names, cm.Namespace+"/"+cm.Labels[InstanceLabel])
		}
		return nil, fmt.Errorf("several semaphore-remote releases in %s (%s): choose one with --remote-namespace", in, strings.Join(names, ", "))
	}
	cm := list.Items[0]
	r := &Remote{
		Namespace:   cm.Namespace,
		Release:     cm.Labels[InstanceLabel],
		ClusterName: cm.Data["clusterName"],
		APIServer:   cm.Data["apiServer"],
	}
	for _, name := range strings.Split(cm.Data["consumers"], "\n") {
		if name = strings.TrimSpace(name); name != "" {
			r.Consumers = append(r.Consumers, name)
		}
	}
	return r, nil
}

// LocalCluster is the name of the cluster of c as the semaphore release in namespace knows it:
// the SEMAPHORE_LOCAL_CLUSTER of its controllers (global.clusterName).
func LocalCluster(ctx context.Context, c kubernetes.Interface, namespace string) (string, error) {
	var pods []corev1.PodSpec
	deps, err := c.AppsV1().Deployments(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", fmt.Errorf("reading the name of the cluster from the semaphore release in namespace %s: %w (or give it with --to-cluster)", namespace, err)
	}
	for _, d := range deps.Items {
		pods = append(pods, d.Spec.Template.Spec)
	}
	dss, err := c.AppsV1().DaemonSets(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", fmt.Errorf("reading the name of the cluster from the semaphore release in namespace %s: %w (or give it with --to-cluster)", namespace, err)
	}
	for _, d := range dss.Items {
		pods = append(pods, d.Spec.Template.Spec)
	}
	var names []string
	for _, p := range pods {
		for _, ctr := range p.Containers {
			for _, e := range ctr.Env {
				if e.Name == LocalClusterEnv && e.Value != "" && !slices.Contains(names, e.Value) {
					names = append(names, e.Value)
				}
			}
		}
	}
	switch len(names) {
	case 0:
		return "", fmt.Errorf("no semaphore release in namespace %s tells the name of this cluster (no controller with %s): give it with --to-cluster, or --namespace of the release", namespace, LocalClusterEnv)
	case 1:
		return names[0], nil
	default:
		return "", fmt.Errorf("the controllers in namespace %s name this cluster differently (%s): give the name with --to-cluster", namespace, strings.Join(names, ", "))
	}
}

// consumerToken reads the token and CA (PEM) of consumer's token Secret of remote, waiting up
// timeout for the token controller to fill it.
func consumerToken(ctx context.Context, c kubernetes.Interface, remote *Remote, consumer string, timeout time.Duration) (token, ca []byte, err error) {
	sel := labels.Set{ConsumerLabel: consumer}
	if remote.Release != "" {
		sel[InstanceLabel] = remote.Release
	}
	var last error
	// Each read uses ctx, not the poll's context: near the poll's deadline client-go's rate
	// limiter would refuse to wait, and the error would hide why linking waited.
	get := func(context.Context) (bool, error) {
		list, err := c.CoreV1().Secrets(remote.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
		if err != nil {
			return false, err
		}
		var secrets []corev1.Secret
		for _, s := range list.Items {
			if s.Type == corev1.SecretTypeServiceAccountToken && s.Labels[TokenLabel] != PreviousToken {
				secrets = append(secrets, s)
			}
		}
		switch len(secrets) {
		case 0:
			return false, fmt.Errorf("consumer %s has no token Secret (type %s, labelled %s) in namespace %s: run helm upgrade on the release to recreate it", consumer, corev1.SecretTypeServiceAccountToken, sel, remote.Namespace)
		case 1:
		default:
			return false, fmt.Errorf("consumer %s has %d token Secrets (labelled %s) in namespace %s, want one", consumer, len(secrets), sel, remote.Namespace)
		}
		s := secrets[0]
		token, ca = s.Data[corev1.ServiceAccountTokenKey], s.Data[corev1.ServiceAccountRootCAKey]
		if len(token) == 0 {
			last = fmt.Errorf("the token Secret %s/%s of consumer %s is not filled yet (by kube-controller-manager's token controller, seconds after the install): wait and run link again, or give --wait", s.Namespace, s.Name, consumer)
			return false, nil
		}
		if block, _ := pem.Decode(ca); block == nil {
			return false, fmt.Errorf("the token Secret %s/%s of consumer %s holds no PEM CA certificate (%s)", s.Namespace, s.Name, consumer, corev1.ServiceAccountRootCAKey)
		}
		return true, nil
	}
	if timeout <= 0 {
		done, err := get(ctx)
		if err == nil && !done {
			err = last
		}
		return token, ca, err
	}
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, get)
	if err != nil && wait.Interrupted(err) && last != nil {
		err = fmt.Errorf("after waiting %s: %w", timeout, last)
	}
	return token, ca, err
}

// ErrRefused is Probe's error when the server refuses the token.
var ErrRefused = errors.New("the server refuses the token (401)")

// Probe calls server as the consumer would: over TLS verified with ca, with token. It asks for
// the server's version, then, to learn whether the token is taken, reviews the token's own
// access (which any authenticated user may).
func Probe(ctx context.Context, server string, ca, token []byte) error {
	cfg := &rest.Config{
		Host:            server,
		BearerToken:     string(token),
		TLSClientConfig: rest.TLSClientConfig{CAData: ca},
		Timeout:         10 * time.Second,
		UserAgent:       UserAgent,
	}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if _, err := c.Discovery().ServerVersion(); apierrors.IsUnauthorized(err) {
		return ErrRefused
	} else if err != nil {
		return fmt.Errorf("GET /version: %w", err)
	}
	_, err = c.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "list", Resource: "services"}},
	}, metav1.CreateOptions{})
	switch {
	case apierrors.IsUnauthorized(err):
		return ErrRefused
	case err != nil:
		return fmt.Errorf("a SelfSubjectAccessReview with the token: %w", err)
	}
	return nil
}

// ensureToken makes Secret namespace/name in c hold token under TokenKey, creating the
// namespace and the Secret when missing, and writes nothing when it already does. Other keys of
// an existing Secret are kept.
func ensureToken(ctx context.Context, c kubernetes.Interface, namespace, name string, token []byte) (Action, error) {
	secrets := c.CoreV1().Secrets(namespace)
	s, err := secrets.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		if _, err := c.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
			if _, err := c.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return "", err
			}
		}
		s = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{"app.kubernetes.io/part-of": "semaphore"}},
			Type:       corev1.SecretTypeOpaque,
			Data:       map[string][]byte{TokenKey: token},
		}
		if _, err := secrets.Create(ctx, s, metav1.CreateOptions{FieldManager: fieldManager}); err != nil {
			return "", err
		}
		return Created, nil
	}
	if err != nil {
		return "", err
	}
	if string(s.Data[TokenKey]) == string(token) {
		return Unchanged, nil
	}
	if s.Data == nil {
		s.Data = map[string][]byte{}
	}
	s.Data[TokenKey] = token
	if _, err := secrets.Update(ctx, s, metav1.UpdateOptions{FieldManager: fieldManager}); err != nil {
		return "", err
	}
	return Updated, nil
}

const fieldManager = "kubectl-semaphore"

// UserAgent is link's user agent, in the API servers' audit logs.
const UserAgent = "kubectl-semaphore-link"

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
