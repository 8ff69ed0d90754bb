package main

import (
	"context"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"
)

// The releases, as docs/charts.md installs them: semaphore-remote in a namespace of its own,
// the umbrella in the semaphore namespace (which also holds the mirrors).
const (
	remoteRelease   = "semaphore-remote"
	remoteNamespace = "semaphore-remote"
	umbrellaRelease = "semaphore"
)

// wireguardPorts are the UDP ports of the WireGuard devices, by remote (wireguard.listenPorts):
// one port per remote cluster, the same on every node.
var wireguardPorts = map[string]int{"aws": 51821, "gcp": 51822, "merit": 51823}

// remoteEntry is one item of the umbrella's global.remotes, as semaphore-remote's NOTES print it.
type remoteEntry = map[string]any

// installRemoteCharts installs charts/semaphore-remote into every cluster with the helm CLI, from the lab's registry,
// with every other cluster as a consumer, and then does for each consumer what the release's
// NOTES tell a user to do: it copies the consumer's token into a Secret of the consumer's
// semaphore namespace and takes the global.remotes entry the NOTES print, with the CA filled
// in, for the consumer's umbrella release (installUmbrellas).
func (l *lab) installRemoteCharts(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	notes := map[string]string{}
	for _, spec := range clusterSpecs {
		consumers := []any{}
		for _, r := range remotesOf(spec.Name) {
			// The consumers of the Calico-way cluster read its IPAM blocks.
			consumers = append(consumers, map[string]any{"name": r, "calicoIPAM": spec.Name == calicoCluster})
		}
		m, err := l.helmInstall(ctx, spec.Name, remoteRelease, remoteRelease, remoteNamespace, map[string]any{
			"clusterName": spec.Name,
			"apiServer":   l.apiServerOnUnderlay(spec.Name),
			"consumers":   consumers,
		})
		if err != nil {
			return fmt.Errorf("%s: %w", spec.Name, err)
		}
		notes[spec.Name] = m.Release.Info.Notes
		if err := os.WriteFile(l.path("clusters", spec.Name, "semaphore-remote-NOTES.txt"), []byte(m.Release.Info.Notes), 0o644); err != nil {
			return err
		}
	}
	l.logf("installed semaphore-remote in %s (helm install oci://%s/%s/%s)", strings.Join(clusterNames(), ", "), l.registry, chartsRepo, remoteRelease)

	l.remoteEntries = map[string][]remoteEntry{}
	for _, consumer := range clusterSpecs {
		for _, remote := range remotesOf(consumer.Name) {
			entry, err := l.followNotes(ctx, remote, consumer.Name, notes[remote])
			if err != nil {
				return fmt.Errorf("following the NOTES of semaphore-remote in %s for consumer %s: %w", remote, consumer.Name, err)
			}
			l.remoteEntries[consumer.Name] = append(l.remoteEntries[consumer.Name], entry)
		}
	}
	l.logf("copied each consumer's token into its cluster, as the NOTES say (%s)", l.path("clusters", "*", "semaphore-remote-NOTES.txt"))
	return nil
}

// The NOTES' commands for one consumer, as the lab reads them (see followNotes).
var (
	notesConsumer = regexp.MustCompile(`(?m)^=== Consumer (\S+) ===$`)
	notesToken    = regexp.MustCompile(`kubectl -n (\S+) get secret (\S+) -o jsonpath='\{\.data\.token\}'`)
	notesCopy     = regexp.MustCompile(`create secret generic (\S+) --from-file=token=/dev/stdin`)
	notesCA       = regexp.MustCompile(`kubectl -n (\S+) get secret (\S+) -o jsonpath='\{\.data\.ca\\\.crt\}'`)
)

// notesSteps are the names and the values entry that semaphore-remote's NOTES give a consumer.
type notesSteps struct {
	// TokenNamespace and TokenSecret hold the consumer's token (step 1) and the CA (step 2).
	TokenNamespace, TokenSecret string
	// CopyName is the Secret the token is copied to in the consumer's cluster (step 1).
	CopyName string
	// Entry is the global.remotes entry (step 3), caData still "<output of step 2>".
	Entry string
}

// parseNotes reads consumer's steps from the NOTES of a semaphore-remote release.
func parseNotes(notes, consumer string) (notesSteps, error) {
	section, err := consumerSection(notes, consumer)
	if err != nil {
		return notesSteps{}, err
	}
	tok := notesToken.FindStringSubmatch(section)
	cp := notesCopy.FindStringSubmatch(section)
	ca := notesCA.FindStringSubmatch(section)
	_, entry, found := strings.Cut(section, "\n  global:\n")
	if tok == nil || cp == nil || ca == nil || !found {
		return notesSteps{}, fmt.Errorf("the NOTES do not say how to get the token, copy it, get the CA and add the remote:\n%s", section)
	}
	if tok[1] != ca[1] || tok[2] != ca[2] {
		return notesSteps{}, fmt.Errorf("the NOTES read the token from %s/%s but the CA from %s/%s", tok[1], tok[2], ca[1], ca[2])
	}
	return notesSteps{TokenNamespace: tok[1], TokenSecret: tok[2], CopyName: cp[1], Entry: dedent(entry, "    ")}, nil
}

// remoteEntryOf is the NOTES' global.remotes entry with caData, checked to be one entry for
// remote without placeholders left.
func (n notesSteps) remoteEntryOf(remote, caData string) (remoteEntry, error) {
	text := strings.ReplaceAll(n.Entry, "<output of step 2>", caData)
	if strings.Contains(text, "<") {
		return nil, fmt.Errorf("the NOTES' global.remotes entry still holds a placeholder:\n%s", text)
	}
	var values struct {
		Remotes []remoteEntry `json:"remotes"`
	}
	if err := yaml.Unmarshal([]byte(text), &values); err != nil {
		return nil, fmt.Errorf("the global.remotes entry of the NOTES does not parse: %w\n%s", err, text)
	}
	if len(values.Remotes) != 1 || values.Remotes[0]["name"] != remote {
		return nil, fmt.Errorf("the NOTES' global.remotes entry is not one entry for %s: %v", remote, values.Remotes)
	}
	return values.Remotes[0], nil
}

// followNotes does steps 1 to 3 of the NOTES of semaphore-remote in cluster remote for
// consumer, with the API instead of kubectl: it reads the names from the NOTES (so that the
// lab breaks when they are wrong), copies the token into consumer's semaphore namespace, and
// returns the global.remotes entry of step 3 with caData set to the output of step 2.
func (l *lab) followNotes(ctx context.Context, remote, consumer, notes string) (remoteEntry, error) {
	steps, err := parseNotes(notes, consumer)
	if err != nil {
		return nil, err
	}

	// Step 1: the token, from the token Secret of the remote cluster into the consumer's. As
	// the NOTES say, kube-controller-manager's token controller fills it a moment after the
	// install: wait and retry.
	src, dst := l.clusters[remote], l.clusters[consumer]
	var s *corev1.Secret
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		s, err = src.Client.CoreV1().Secrets(steps.TokenNamespace).Get(ctx, steps.TokenSecret, metav1.GetOptions{})
		return err == nil && len(s.Data[corev1.ServiceAccountTokenKey]) > 0, err
	})
	if err != nil {
		return nil, fmt.Errorf("token Secret %s/%s: no token from the token controller: %w", steps.TokenNamespace, steps.TokenSecret, err)
	}
	token := s.Data[corev1.ServiceAccountTokenKey]
	if err := dst.EnsureNamespace(ctx, semaphoreNamespace); err != nil {
		return nil, err
	}
	copied := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: steps.CopyName, Namespace: semaphoreNamespace},
		Data:       map[string][]byte{"token": token},
	}
	if _, err := dst.Client.CoreV1().Secrets(semaphoreNamespace).Create(ctx, copied, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}

	// Step 2: the CA (same Secret), base64-encoded PEM as the jsonpath prints it.
	ca := s.Data[corev1.ServiceAccountRootCAKey]
	if block, _ := pem.Decode(ca); block == nil {
		return nil, fmt.Errorf("token Secret %s/%s holds no PEM CA", steps.TokenNamespace, steps.TokenSecret)
	}

	// Step 3: the entry, as printed, with the output of step 2.
	return steps.remoteEntryOf(remote, base64.StdEncoding.EncodeToString(ca))
}

// consumerSection is the part of the NOTES for consumer: from its "=== Consumer ===" line to
// the next one, or to the paragraph after the last.
func consumerSection(notes, consumer string) (string, error) {
	idx := notesConsumer.FindAllStringSubmatchIndex(notes, -1)
	for i, m := range idx {
		if notes[m[2]:m[3]] != consumer {
			continue
		}
		end := len(notes)
		if i+1 < len(idx) {
			end = idx[i+1][0]
		} else if j := strings.Index(notes[m[1]:], "\nTo rotate"); j >= 0 {
			end = m[1] + j
		}
		return notes[m[1]:end], nil
	}
	return "", errors.New("no section for the consumer in the NOTES")
}

// dedent removes prefix from every line of the YAML block under "global:" and stops at the
// first line that is not indented by it (the end of the block).
func dedent(block, prefix string) string {
	var out []string
	for _, line := range strings.Split(block, "\n") {
		if strings.TrimSpace(line) == "" {
			break
		}
		rest, ok := strings.CutPrefix(line, prefix)
		if !ok {
			break
		}
		out = append(out, rest)
	}
	return strings.Join(out, "\n")
}

// installUmbrellas installs charts/semaphore into every cluster with the helm CLI, from the lab's registry, with the
// remotes the NOTES gave (installRemoteCharts) and the lab's settings (umbrellaValues). The
// controllers then run with what it renders (podOf).
func (l *lab) installUmbrellas(ctx context.Context) error {
	for _, spec := range clusterSpecs {
		m, err := l.helmInstall(ctx, spec.Name, umbrellaRelease, umbrellaRelease, semaphoreNamespace, l.umbrellaValues(spec.Name))
		if err != nil {
			return fmt.Errorf("%s: %w", spec.Name, err)
		}
		if err := os.WriteFile(l.path("clusters", spec.Name, "semaphore-manifest.yaml"), []byte(m.Release.Manifest), 0o644); err != nil {
			return err
		}
	}
	l.logf("installed the umbrella chart in %s (helm install oci://%s/%s/%s; rendered manifests in %s)",
		strings.Join(clusterNames(), ", "), l.registry, chartsRepo, umbrellaRelease, l.path("clusters", "*", "semaphore-manifest.yaml"))
	return nil
}

// umbrellaValues are the umbrella's values for cluster: its name and remotes, and what the lab
// changes from the defaults (podCIDRsFrom: calico-ipam for the Calico-way cluster). Everything else, the controllers' settings included, is the
// chart's default.
func (l *lab) umbrellaValues(cluster string) map[string]any {
	listenPorts := map[string]any{}
	for _, r := range remotesOf(cluster) {
		listenPorts[r] = wireguardPorts[r]
	}
	remotes := make([]any, len(l.remoteEntries[cluster]))
	for i, e := range l.remoteEntries[cluster] {
		remotes[i] = e
	}
	wireguard := map[string]any{
		"listenPorts": listenPorts,
		// Handshakes every few seconds instead of 25: the lab shows them while you watch.
		"keepalive": "5s",
	}
	if cluster != calicoCluster {
		// The Calico-way cluster's pod addresses are in its IPAM blocks (calico.go).
		wireguard["podCIDRsFrom"] = map[string]any{calicoCluster: "calico-ipam"}
	}
	return map[string]any{
		"global": map[string]any{
			"clusterName": cluster,
			"remotes":     remotes,
			// The images the lab built, in its registry: the one value that moves them.
			"image": map[string]any{"registry": l.registry + "/" + imagesRepo},
		},
		// The mirrors go to the release namespace; the chart then leaves the namespace alone.
		"serviceMirror": map[string]any{"mirrorNamespace": map[string]any{"name": semaphoreNamespace}},
		"policy":        map[string]any{"calicoAPI": calicoAPI},
		"wireguard":     wireguard,
	}
}
