// Package versions reads which versions of the Semaphore components run in a cluster: the
// image each component's pods run, its tag, the digest the container runtime pulled, and how
// many of those pods are ready.
package versions

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/release"
)

// Cluster is what runs in the cluster of one kubeconfig context.
type Cluster struct {
	// Context is the kubeconfig context ("" for the current one).
	Context string `json:"context,omitempty"`
	// Cluster is the cluster's name as its components know it (SEMAPHORE_LOCAL_CLUSTER).
	Cluster    string      `json:"cluster,omitempty"`
	Components []Component `json:"components"`
}

// Component is one Semaphore component's workload and the images its pods run.
type Component struct {
	// Name is service-mirror, policy or wireguard.
	Name string `json:"name"`
	// Kind is Deployment or DaemonSet; Namespace and Workload name it.
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Workload  string `json:"workload"`
	// Ready of Pods are ready.
	Ready int `json:"ready"`
	Pods  int `json:"pods"`
	// Images are the images the pods run, several during a rollout; without pods, the one
	// the workload's pod template names.
	Images []Image `json:"images"`
}

// Image is an image the component's container runs, in Ready of Pods pods.
type Image struct {
	// Image is the reference the pods' spec names; Tag its tag ("" for none).
	Image string `json:"image"`
	Tag   string `json:"tag,omitempty"`
	// Digest is the digest of what the container runtime pulled (the container status's
	// imageID), else the one Image pins; "" when neither says.
	Digest string `json:"digest,omitempty"`
	Ready  int    `json:"ready"`
	Pods   int    `json:"pods"`
}

// Read returns the Semaphore components in namespace ("" for every namespace) of the cluster
// of client, with the images their pods run.
func Read(ctx context.Context, client kubernetes.Interface, namespace string) (Cluster, error) {
	components, err := release.Find(ctx, client, namespace)
	if err != nil {
		return Cluster{}, err
	}
	out := Cluster{Components: []Component{}}
	for _, c := range components {
		pods, err := c.Pods(ctx, client)
		if err != nil {
			return Cluster{}, fmt.Errorf("listing the pods of %s: %w", c.WorkloadRef(), err)
		}
		out.Components = append(out.Components, componentOf(c, pods))
		if out.Cluster == "" {
			out.Cluster = c.LocalCluster()
		}
	}
	return out, nil
}

// componentOf is the version of c that its pods run.
func componentOf(c release.Component, pods []corev1.Pod) Component {
	v := Component{Name: c.Name, Kind: c.Kind, Namespace: c.Namespace, Workload: c.Workload, Images: []Image{}}
	container := ""
	if ctr := c.Container(); ctr != nil {
		container = ctr.Name
		if len(pods) == 0 {
			v.Images = append(v.Images, imageOf(ctr.Image, ""))
		}
	}
	for i := range pods {
		v.add(podImage(&pods[i], container), release.PodNotReady(&pods[i]) == "")
	}
	return v
}

// add counts a pod that runs img, and is ready when ready.
func (v *Component) add(img Image, ready bool) {
	n := 0
	if ready {
		n = 1
	}
	v.Pods++
	v.Ready += n
	for i := range v.Images {
		if v.Images[i].Image == img.Image && v.Images[i].Digest == img.Digest {
			v.Images[i].Pods++
			v.Images[i].Ready += n
			return
		}
	}
	img.Pods, img.Ready = 1, n
	v.Images = append(v.Images, img)
}

// podImage is the image pod's container named container (else its first) runs.
func podImage(pod *corev1.Pod, container string) Image {
	ref := ""
	for i, ctr := range pod.Spec.Containers {
		if i == 0 || ctr.Name == container {
			ref = ctr.Image
		}
	}
	imageID := ""
	for _, s := range pod.Status.ContainerStatuses {
		if s.Name == container {
			imageID = s.ImageID
		}
	}
	return imageOf(ref, imageID)
}

// imageOf is the image of reference ref (registry:5000/repo:tag@digest, tag and digest
// optional), pulled as imageID ("docker-pullable://repo@sha256:...", "repo@sha256:..."; "" when
// unknown). An imageID without "@" is the runtime's own image ID, not a digest a registry
// knows: it is left out.
func imageOf(ref, imageID string) Image {
	img := Image{Image: ref}
	name := ref
	if i := strings.LastIndex(ref, "@"); i >= 0 {
		name, img.Digest = ref[:i], ref[i+1:]
	}
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		img.Tag = name[i+1:]
	}
	if i := strings.LastIndex(imageID, "@"); i >= 0 {
		img.Digest = imageID[i+1:]
	}
	return img
}

// WriteTable writes the components of each cluster, one line per image they run: its ready
// pods, tag, digest (shortened) and reference.
func WriteTable(w io.Writer, clusters []Cluster) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	for i, cl := range clusters {
		if i > 0 {
			fmt.Fprintln(tw)
		}
		writeCluster(tw, cl)
	}
	return tw.Flush()
}

func writeCluster(w io.Writer, cl Cluster) {
	title := "CLUSTER " + cl.Cluster
	if cl.Cluster == "" {
		title = "CLUSTER (name unknown)"
	}
	if cl.Context != "" {
		title += " (context " + cl.Context + ")"
	}
	fmt.Fprintln(w, title)
	if len(cl.Components) == 0 {
		fmt.Fprintf(w, "no Semaphore components (workloads labelled %s)\n", release.PartOf)
		return
	}
	fmt.Fprintln(w, "COMPONENT\tWORKLOAD\tREADY\tTAG\tDIGEST\tIMAGE")
	for _, c := range cl.Components {
		workload := fmt.Sprintf("%s %s/%s", c.Kind, c.Namespace, c.Workload)
		for _, img := range c.Images {
			fmt.Fprintf(w, "%s\t%s\t%d/%d\t%s\t%s\t%s\n", c.Name, workload, img.Ready, img.Pods, dash(img.Tag), dash(shortDigest(img.Digest)), img.Image)
		}
	}
}

// shortDigest is digest with its hash cut to 12 hex digits, as docker shows image IDs.
func shortDigest(digest string) string {
	algo, hash, ok := strings.Cut(digest, ":")
	if !ok || len(hash) <= 12 {
		return digest
	}
	return algo + ":" + hash[:12]
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
