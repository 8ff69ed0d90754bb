package uninstall

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-semaphore/semaphore/internal/rollout"
)

// ModeEnv is the variable that puts a component into the uninstall mode.
const ModeEnv = "SEMAPHORE_UNINSTALL"

// HookCommand is the first argument that makes a component's binary run the pre-delete hook.
const HookCommand = "uninstall-hook"

// Workload kinds a hook switches.
const (
	Deployment = "deployment"
	DaemonSet  = "daemonset"
)

// Hook switches one workload into the uninstall mode and waits until every pod of it has
// removed what it made.
type Hook struct {
	Client kubernetes.Interface
	// Kind is Deployment or DaemonSet; Namespace and Name name the workload, Container its
	// component's container.
	Kind, Namespace, Name, Container string
	// Timeout bounds the wait; Poll is how often the workload's status is read.
	Timeout, Poll time.Duration
	Log           *slog.Logger
}

// Run patches the workload and waits for its rollout. A Deployment is recreated rather than
// rolled (strategy Recreate): a pod still in the normal mode would write again what the new
// ones remove. A DaemonSet replaces every node's pod at once (maxUnavailable 100%, no surge):
// each node has one pod, so none overlaps, and it counts as available once ready
// (minReadySeconds 0). The patch is idempotent: a hook run again (a retried uninstall)
// finds the workload switched already and only waits.
func (h Hook) Run(ctx context.Context) error {
	patch, err := h.patch()
	if err != nil {
		return err
	}
	if err := h.apply(ctx, patch); err != nil {
		return fmt.Errorf("switching %s %s/%s into the uninstall mode: %w", h.Kind, h.Namespace, h.Name, err)
	}
	h.Log.Info("switched into the uninstall mode; waiting for every pod to remove what it made", "kind", h.Kind, "name", h.Name, "timeout", h.Timeout)
	var state string
	err = wait.PollUntilContextTimeout(ctx, h.Poll, h.Timeout, true, func(ctx context.Context) (bool, error) {
		done, s, err := h.rolledOut(ctx)
		if err != nil {
			h.Log.Warn("reading the workload failed; retrying", "err", err)
			return false, nil
		}
		if s != state {
			h.Log.Info("waiting", "kind", h.Kind, "name", h.Name, "state", s)
			state = s
		}
		return done, nil
	})
	if err != nil {
		return fmt.Errorf("%s %s/%s: not every pod removed what it made within %s (%s): a pod that cannot start (a node down, an image that cannot be pulled) keeps its component's objects; run helm uninstall again once it can, or with --no-hooks to leave them", h.Kind, h.Namespace, h.Name, h.Timeout, state)
	}
	h.Log.Info("every pod removed what its component made", "kind", h.Kind, "name", h.Name)
	return nil
}

// patch is the strategic merge patch that switches the workload.
func (h Hook) patch() ([]byte, error) {
	template := map[string]any{"spec": map[string]any{"containers": []any{map[string]any{
		"name": h.Container,
		"env":  []any{map[string]any{"name": ModeEnv, "value": "true"}},
	}}}}
	spec := map[string]any{"template": template}
	switch h.Kind {
	case Deployment:
		spec["strategy"] = map[string]any{"type": string(appsv1.RecreateDeploymentStrategyType), "rollingUpdate": nil}
	case DaemonSet:
		spec["updateStrategy"] = map[string]any{
			"type":          string(appsv1.RollingUpdateDaemonSetStrategyType),
			"rollingUpdate": map[string]any{"maxUnavailable": "100%", "maxSurge": 0},
		}
		// No pod stands by for a predecessor here: each is available once ready.
		spec["minReadySeconds"] = 0
	default:
		return nil, fmt.Errorf("unknown workload kind %q (want %s or %s)", h.Kind, Deployment, DaemonSet)
	}
	return json.Marshal(map[string]any{"spec": spec})
}

func (h Hook) apply(ctx context.Context, patch []byte) error {
	opts := metav1.PatchOptions{FieldManager: "semaphore-uninstall-hook"}
	var err error
	if h.Kind == Deployment {
		_, err = h.Client.AppsV1().Deployments(h.Namespace).Patch(ctx, h.Name, types.StrategicMergePatchType, patch, opts)
	} else {
		_, err = h.Client.AppsV1().DaemonSets(h.Namespace).Patch(ctx, h.Name, types.StrategicMergePatchType, patch, opts)
	}
	return err
}

// rolledOut reports whether the rollout is complete (package rollout), and where it stands.
func (h Hook) rolledOut(ctx context.Context) (bool, string, error) {
	var pending string
	if h.Kind == Deployment {
		d, err := h.Client.AppsV1().Deployments(h.Namespace).Get(ctx, h.Name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		pending = rollout.DeploymentPending(d)
	} else {
		ds, err := h.Client.AppsV1().DaemonSets(h.Namespace).Get(ctx, h.Name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		pending = rollout.DaemonSetPending(ds)
	}
	return pending == "", pending, nil
}

// HookFromEnv reads a Hook's settings from the variables the charts set; each error names its
// variable.
func HookFromEnv(lookup func(string) string) (Hook, error) {
	h := Hook{Namespace: lookup("SEMAPHORE_UNINSTALL_NAMESPACE"), Container: lookup("SEMAPHORE_UNINSTALL_CONTAINER"), Poll: 2 * time.Second}
	kind, name, ok := strings.Cut(lookup("SEMAPHORE_UNINSTALL_WORKLOAD"), "/")
	if !ok || name == "" || (kind != Deployment && kind != DaemonSet) {
		return h, fmt.Errorf("SEMAPHORE_UNINSTALL_WORKLOAD: %q is not %s/<name> or %s/<name>", lookup("SEMAPHORE_UNINSTALL_WORKLOAD"), Deployment, DaemonSet)
	}
	h.Kind, h.Name = kind, name
	if h.Namespace == "" {
		return h, errors.New("SEMAPHORE_UNINSTALL_NAMESPACE: must not be empty")
	}
	if h.Container == "" {
		return h, errors.New("SEMAPHORE_UNINSTALL_CONTAINER: must not be empty")
	}
	timeout, err := time.ParseDuration(lookup("SEMAPHORE_UNINSTALL_TIMEOUT"))
	if err != nil || timeout <= 0 {
		return h, fmt.Errorf("SEMAPHORE_UNINSTALL_TIMEOUT: %q is not a positive duration", lookup("SEMAPHORE_UNINSTALL_TIMEOUT"))
	}
	h.Timeout = timeout
	return h, nil
}
