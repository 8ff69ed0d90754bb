//go:build linux

package app_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-semaphore/semaphore/components/wireguard/device"
	"github.com/kube-semaphore/semaphore/components/wireguard/device/devicetest"
	"github.com/kube-semaphore/semaphore/components/wireguard/peers"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
)

// The uninstall mode removes, on its node, everything of ours: the devices of the configured
// remotes and of remotes configured once (a key file of ours), their routes and keys, and the
// node's annotations of ours, whatever SEMAPHORE_REMOTES still says, and the lock the agents
// took in the key directory; a device by our prefix
// without a key file and someone else's annotation stay.
func TestUninstallModeRemovesEverythingOfOursOnTheNode(t *testing.T) {
	const owner = "example.com/owner"
	s := newScene(t, map[string]string{owner: "someone-else"}, "test")
	s.remoteNode(t, "aws-node-1", "192.0.2.11", devicetest.Key(t), "198.18.11.0/24")
	aws := peers.DeviceName("aws")
	awsKey := s.keyedDevice(t, aws, 51821)
	// A remote configured once and since dropped: its device, key and annotation are ours too.
	merit := peers.DeviceName("merit")
	meritKey := s.keyedDevice(t, merit, 51822)
	patch := []byte(`{"metadata":{"annotations":{"` + peers.PubKeyAnnotation("merit") + `":"` + meritKey.PublicKey().String() + `"}}}`)
	if _, err := s.gcp.Client.CoreV1().Nodes().Patch(context.Background(), "gcp-node-1", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	const foreign = "wg-manual"
	if err := s.host.Ensure(foreign, devicetest.Key(t), 51899, 1420); err != nil {
		t.Fatal(err)
	}

	first := runApp(t, s.env, s.log.With("run", "normal"))
	testenv.Eventually(t, 30*time.Second, "the normal mode publishes aws's key", func() error {
		n, err := s.localNode()
		if err == nil && n.Annotations[peers.PubKeyAnnotation("aws")] != awsKey.PublicKey().String() {
			err = fmt.Errorf("annotations %v", n.Annotations)
		}
		return err
	})
	first.stop(t)

	s.env["SEMAPHORE_UNINSTALL"] = "true"
	runApp(t, s.env, s.log.With("run", "uninstall"))
	testenv.Eventually(t, 30*time.Second, "the uninstall mode removes aws's and merit's devices, routes, keys, annotations", func() error {
		if err := s.removed(aws, "aws", owner); err != nil {
			return err
		}
		return s.removed(merit, "merit", owner)
	})
	if got, err := s.host.Devices(peers.DevicePrefix); err != nil || !slices.Equal(got, []string{foreign}) {
		t.Errorf("devices %v (err %v), want only %s, which is not ours", got, err, foreign)
	}
	if _, err := os.Stat(device.HoldFile(s.keyDir)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the agents' lock file: %v, want it removed", err)
	}
}
