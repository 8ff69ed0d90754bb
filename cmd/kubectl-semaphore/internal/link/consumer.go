package link

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// consumerOf is the name of o.To among the consumers of remote: o.ToCluster, else the name
// the semaphore release in o.To gives its cluster.
func consumerOf(ctx context.Context, o Options, remote *Remote, where string) (string, error) {
	consumer := o.ToCluster
	if consumer == "" {
		var err error
		if consumer, err = localCluster(ctx, o.To, o.Namespace); err != nil {
			return "", fmt.Errorf("context %s: %w", o.ToContext, err)
		}
	}
	if !slices.Contains(remote.consumers, consumer) {
		return "", fmt.Errorf("%s has no consumer %q (its consumers: %s): add it to the release's consumers (helm upgrade %s ... -n %s --set 'consumers[%d].name=%s', keeping the others) and run link again",
			where, consumer, listOrNone(remote.consumers), remote.Release, remote.Namespace, len(remote.consumers), consumer)
	}
	return consumer, nil
}

// localCluster is the name of the cluster of c as the semaphore release in namespace knows it:
// the SEMAPHORE_LOCAL_CLUSTER of its controllers (global.clusterName).
func localCluster(ctx context.Context, c kubernetes.Interface, namespace string) (string, error) {
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
				if e.Name == localClusterEnv && e.Value != "" && !slices.Contains(names, e.Value) {
					names = append(names, e.Value)
				}
			}
		}
	}
	switch len(names) {
	case 0:
		return "", fmt.Errorf("no semaphore release in namespace %s tells the name of this cluster (no controller with %s): give it with --to-cluster, or --namespace of the release", namespace, localClusterEnv)
	case 1:
		return names[0], nil
	default:
		return "", fmt.Errorf("the controllers in namespace %s name this cluster differently (%s): give the name with --to-cluster", namespace, strings.Join(names, ", "))
	}
}

// ensureToken makes the Secret namespace/SecretName(remote) in c hold token under TokenKey,
// creating the namespace and the Secret when missing, and writes nothing when it already does.
// Other keys of an existing Secret are kept. A Secret it creates is labelled as link's own
// (linkedRemoteLabel), which Unlink may delete; one it finds and updates is left unlabelled,
// its maker's.
func ensureToken(ctx context.Context, c kubernetes.Interface, namespace, remote string, token []byte) (Action, error) {
	name := SecretName(remote)
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
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{partOfLabel: partOf, linkedRemoteLabel: remote}},
			Type:       corev1.SecretTypeOpaque,
			Data:       map[string][]byte{TokenKey: token},
		}
		if _, err := secrets.Create(ctx, s, metav1.CreateOptions{FieldManager: fieldManager}); err != nil {
			return "", err
		}
		return created, nil
	}
	if err != nil {
		return "", err
	}
	if string(s.Data[TokenKey]) == string(token) {
		return unchanged, nil
	}
	if s.Data == nil {
		s.Data = map[string][]byte{}
	}
	s.Data[TokenKey] = token
	if _, err := secrets.Update(ctx, s, metav1.UpdateOptions{FieldManager: fieldManager}); err != nil {
		return "", err
	}
	return updated, nil
}

const fieldManager = "kubectl-semaphore"
