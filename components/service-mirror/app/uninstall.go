package app

import (
	"log/slog"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/kube-semaphore/semaphore/internal/daemon"
	"github.com/kube-semaphore/semaphore/internal/uninstall"
)

// NewUninstalling is semaphore-service-mirror in the uninstall mode: it deletes every object
// that carries its managed-by label, whichever remote it was made for: the mirror and global
// Services and EndpointSlices in the mirror namespace and, with the Multi-Cluster Services API,
// the ServiceImports, derived Services and EndpointSlices in every namespace; then its Lease.
func NewUninstalling(cfg Config, log *slog.Logger) (*daemon.Uninstalling, error) {
	return daemon.NewDeletingOwned(Name, MetricsPrefix, cfg.Elected, ownedKinds(cfg), log)
}

// ownedKinds are where the component writes: the mirror namespace and, with the Multi-Cluster
// Services API, every namespace (metav1.NamespaceAll). Services go before their EndpointSlices,
// so that none is left selecting nothing for long.
func ownedKinds(cfg Config) []uninstall.Owned {
	namespace := cfg.Namespace
	var kinds []uninstall.Owned
	if cfg.MCS {
		namespace = metav1.NamespaceAll
		kinds = append(kinds, uninstall.Owned{Resource: schema.GroupVersionResource{Group: mcsv1beta1.GroupVersion.Group, Version: mcsv1beta1.GroupVersion.Version, Resource: "serviceimports"}, Namespace: namespace, Component: Name})
	}
	return append(kinds,
		uninstall.Owned{Resource: corev1.SchemeGroupVersion.WithResource("services"), Namespace: namespace, Component: Name},
		uninstall.Owned{Resource: discoveryv1.SchemeGroupVersion.WithResource("endpointslices"), Namespace: namespace, Component: Name},
	)
}
