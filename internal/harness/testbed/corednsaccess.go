package testbed

import (
	"context"
	"fmt"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"
)

// What a cluster must hold for the Corefile of docs/coredns.md: CoreDNS's ServiceAccount with
// the ClusterRole the doc gives it, and the CRDs of the Multi-Cluster Services API, whose
// ServiceImports the kubernetes plugin's multicluster option lists (without them CoreDNS never
// becomes ready). The chart installs the CRDs; tests install them from MCSCRDs.

// CoreDNS's ServiceAccount, as kubeadm deploys it; docs/coredns.md's ClusterRole is bound to it.
const (
	CoreDNSNamespace      = "kube-system"
	CoreDNSServiceAccount = "coredns"
)

// DocsCoreDNSRole is the ClusterRole docs/coredns.md gives CoreDNS (its only ```yaml block).
func DocsCoreDNSRole() (*rbacv1.ClusterRole, error) {
	block, err := docsBlock("yaml")
	if err != nil {
		return nil, err
	}
	var role rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict([]byte(block), &role); err != nil {
		return nil, fmt.Errorf("the yaml block: %w", err)
	}
	if role.APIVersion != rbacv1.SchemeGroupVersion.String() || role.Kind != "ClusterRole" {
		return nil, fmt.Errorf("the yaml block is a %s %s, want a ClusterRole of %s", role.APIVersion, role.Kind, rbacv1.SchemeGroupVersion)
	}
	return &role, nil
}

// GrantCoreDNSAccess creates, through client, CoreDNS's ServiceAccount, the ClusterRole of
// docs/coredns.md and the ClusterRoleBinding that gives the one the other, as kubeadm names
// them.
func GrantCoreDNSAccess(ctx context.Context, client kubernetes.Interface) error {
	role, err := DocsCoreDNSRole()
	if err != nil {
		return fmt.Errorf("docs/coredns.md: %w", err)
	}
	if _, err := client.CoreV1().ServiceAccounts(CoreDNSNamespace).Create(ctx, &corev1.ServiceAccount{
		ObjectMeta: metav1.ObjectMeta{Name: CoreDNSServiceAccount},
	}, metav1.CreateOptions{}); err != nil {
		return err
	}
	if _, err := client.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		return err
	}
	_, err = client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: CoreDNSServiceAccount, Namespace: CoreDNSNamespace}},
	}, metav1.CreateOptions{})
	return err
}

// AddCoreDNSUser writes to path a kubeconfig of c that authenticates as CoreDNS's
// ServiceAccount does (its user name and groups, by a client certificate), so that CoreDNS run
// outside a pod may do no more than GrantCoreDNSAccess lets it.
func (c *Cluster) AddCoreDNSUser(path string) error {
	user := "system:serviceaccount:" + CoreDNSNamespace + ":" + CoreDNSServiceAccount
	return c.AddUser(path, user, []string{"system:serviceaccounts", "system:serviceaccounts:" + CoreDNSNamespace}, "")
}

// MCSCRDs is the directory of the Multi-Cluster Services API's CRDs as the service-mirror chart
// installs them (its crds/), for Options.CRDDirs or envtest.CRDInstallOptions.Paths: CoreDNS
// running the Corefile of docs/coredns.md needs them in its cluster.
func MCSCRDs() string {
	return filepath.Join(RepoRoot(), "charts", "semaphore", "charts", "service-mirror", "crds")
}

// ClusterPropertyCRDs is the directory of the About API's ClusterProperty CRD, which the service
// mirror reads clusters' IDs from: Semaphore does not install it, tests and the lab do.
func ClusterPropertyCRDs() string {
	return filepath.Join(packageDir(), "testdata", "clusterproperty")
}
