package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-semaphore/semaphore/internal/remote"
)

// checkIdentities checks, for every controller the lab runs as a chart's pod, who it is to each
// cluster it talks to: its local kubeconfig must be its release's ServiceAccount, each remote's
// kubeconfig the ServiceAccount semaphore-remote made in that remote for this cluster, and
// that one must be refused any write. It returns the problems and prints one line per
// controller.
func (l *lab) checkIdentities(ctx context.Context) []string {
	var problems []string
	fmt.Fprintln(l.out, "Identities (SelfSubjectReview and SelfSubjectAccessReview with each pod's own credentials)")
	for _, c := range l.snapshot().Controllers {
		if c.Kubeconfig == "" {
			continue
		}
		var seen []string
		local, _, err := whoAmI(ctx, c.Kubeconfig)
		switch {
		case err != nil:
			problems = append(problems, fmt.Sprintf("%s in %s: local identity: %v", c.Component, c.Cluster, err))
		case !strings.HasPrefix(local, "system:serviceaccount:"+semaphoreNamespace+":"):
			problems = append(problems, fmt.Sprintf("%s in %s is %s locally, not a ServiceAccount of the umbrella release", c.Component, c.Cluster, local))
		default:
			seen = append(seen, c.Cluster+": "+local)
		}
		for _, r := range remotesOf(c.Cluster) {
			want := "system:serviceaccount:" + remoteNamespace + ":semaphore-remote-" + c.Cluster
			got, client, err := whoAmI(ctx, remote.KubeconfigPath(c.RemotesDir, r))
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s in %s: identity in %s: %v", c.Component, c.Cluster, r, err))
				continue
			}
			if got != want {
				problems = append(problems, fmt.Sprintf("%s in %s is %s in %s, want %s (semaphore-remote's)", c.Component, c.Cluster, got, r, want))
				continue
			}
			if allowed, err := canWrite(ctx, client); err != nil || allowed {
				problems = append(problems, fmt.Sprintf("%s in %s may write services in %s as %s (err %v)", c.Component, c.Cluster, r, got, err))
				continue
			}
			seen = append(seen, r+": "+strings.TrimPrefix(got, "system:serviceaccount:")+" (read-only)")
		}
		fmt.Fprintf(l.out, "  %-37s %s\n", c.Cluster+"/"+c.PodName, strings.Join(seen, ", "))
	}
	return problems
}

// whoAmI is the user kubeconfig authenticates as, and a client that uses it.
func whoAmI(ctx context.Context, kubeconfig string) (string, kubernetes.Interface, error) {
	cs, err := clientsetOf(kubeconfig)
	if err != nil {
		return "", nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	r, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return "", nil, err
	}
	return r.Status.UserInfo.Username, cs, nil
}

// canWrite tells whether client's user may create Services in any namespace.
func canWrite(ctx context.Context, client kubernetes.Interface) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	r, err := client.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "create", Resource: "services"}},
	}, metav1.CreateOptions{})
	if err != nil {
		return false, err
	}
	return r.Status.Allowed, nil
}

func clientsetOf(kubeconfig string) (kubernetes.Interface, error) {
	cfg, err := clientConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}
