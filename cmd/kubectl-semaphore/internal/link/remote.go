package link

import (
	"context"
	"encoding/pem"
	"errors"
	"fmt"
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

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/release"
)

// checkComplete refuses a remote whose release does not say the cluster's name and API server.
func (r *Remote) checkComplete(where string) error {
	var unset []string
	if r.clusterName == "" {
		unset = append(unset, "clusterName (this cluster's name, as its consumers know it)")
	}
	if r.apiServer == "" {
		unset = append(unset, "apiServer (its API server URL, as the consumers' pods reach it)")
	}
	if len(unset) > 0 {
		return fmt.Errorf("%s has no %s: set them (helm upgrade %s ... -n %s --reuse-values --set ...) and run link again",
			where, strings.Join(unset, " and no "), r.Release, r.Namespace)
	}
	return nil
}

// checkServer checks from here that remote's API server takes consumer's token, over TLS
// verified with ca.
func checkServer(ctx context.Context, remote *Remote, consumer string, ca, token []byte, where string) error {
	err := probe(ctx, remote.apiServer, ca, token)
	switch {
	case errors.Is(err, errRefused):
		return fmt.Errorf("%s hands consumer %s the server %s, which refuses the consumer's token (401): apiServer names another cluster than this one, or the token was revoked; "+
			"fix the release's apiServer value, or recreate the token (delete Secret %s/%s-token and run helm upgrade), and run link again (--skip-reachability-check skips this check)",
			where, consumer, remote.apiServer, remote.Namespace, SecretName(consumer))
	case err != nil:
		return fmt.Errorf("%s hands consumer %s the server %s, and from here it is not reachable with the consumer's token and CA: %w\n"+
			"Semaphore's controllers in %s must reach that address: fix the release's apiServer value, or, when only the consumer's pods reach it (not this machine), run link with --skip-reachability-check",
			where, consumer, remote.apiServer, err, consumer)
	}
	return nil
}

// findRemote finds the one semaphore-remote release in namespace ("" for all) by its link
// ConfigMap.
func findRemote(ctx context.Context, c kubernetes.Interface, namespace string) (*Remote, error) {
	list, err := c.CoreV1().ConfigMaps(namespace).List(ctx, metav1.ListOptions{LabelSelector: remoteLinkLabel + "=true"})
	if err != nil {
		return nil, fmt.Errorf("looking for semaphore-remote: %w", err)
	}
	in := release.Where(namespace)
	switch len(list.Items) {
	case 0:
		return nil, fmt.Errorf("no semaphore-remote release in %s (no ConfigMap labelled %s=true): install charts/semaphore-remote there with this cluster's consumers (README, \"Installing with Helm\"), or upgrade a release older than this plugin", in, remoteLinkLabel)
	case 1:
	default:
		var names []string
		for _, cm := range list.Items {
			names = append(names, cm.Namespace+"/"+cm.Labels[instanceLabel])
		}
		return nil, fmt.Errorf("several semaphore-remote releases in %s (%s): choose one with --remote-namespace", in, strings.Join(names, ", "))
	}
	cm := list.Items[0]
	r := &Remote{
		Namespace:   cm.Namespace,
		Release:     cm.Labels[instanceLabel],
		clusterName: cm.Data["clusterName"],
		apiServer:   cm.Data["apiServer"],
	}
	for _, name := range strings.Split(cm.Data["consumers"], "\n") {
		if name = strings.TrimSpace(name); name != "" {
			r.consumers = append(r.consumers, name)
		}
	}
	return r, nil
}

// consumerToken reads the token and CA (PEM) of consumer's token Secret of remote, waiting up
// timeout for the token controller to fill it.
func consumerToken(ctx context.Context, c kubernetes.Interface, remote *Remote, consumer string, timeout time.Duration) (token, ca []byte, err error) {
	sel := labels.Set{consumerLabel: consumer}
	if remote.Release != "" {
		sel[instanceLabel] = remote.Release
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
			if s.Type == corev1.SecretTypeServiceAccountToken && s.Labels[tokenLabel] != previousToken {
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

// errRefused is probe's error when the server refuses the token.
var errRefused = errors.New("the server refuses the token (401)")

// probe calls server as the consumer would: over TLS verified with ca, with token. It asks for
// the server's version, then, to learn whether the token is taken, reviews the token's own
// access (which any authenticated user may).
func probe(ctx context.Context, server string, ca, token []byte) error {
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
		return errRefused
	} else if err != nil {
		return fmt.Errorf("GET /version: %w", err)
	}
	_, err = c.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "list", Resource: "services"}},
	}, metav1.CreateOptions{})
	switch {
	case apierrors.IsUnauthorized(err):
		return errRefused
	case err != nil:
		return fmt.Errorf("a SelfSubjectAccessReview with the token: %w", err)
	}
	return nil
}
