package charts_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kube-semaphore/semaphore/internal/testenv"
)

// validUmbrella is a minimal valid set of umbrella values the cases below break one thing of.
const validUmbrella = `
global:
  clusterName: gcp
  remotes:
    - name: aws
      server: https://aws.example.com:6443
      tokenSecret:
        name: semaphore-remote-aws
        key: token
wireguard:
  listenPorts:
    aws: 51821
`

// validRemote is a minimal valid set of semaphore-remote values.
const validRemote = `
consumers:
  - name: gcp
`

// Bad values are refused before anything is installed, with an error that names the value at
// fault: the schema (closed objects, patterns, enums) or, for what a schema cannot say, the
// chart's own checks.
func TestBadValuesAreRefused(t *testing.T) {
	tests := []struct {
		name, chart, base, bad string
		// want are strings the error must contain (case-insensitive): at least the field.
		want []string
	}{
		{
			name: "missing clusterName", chart: umbrellaChart, base: validUmbrella,
			bad:  "global: {clusterName: null}",
			want: []string{"clusterName"},
		},
		{
			name: "empty clusterName", chart: umbrellaChart, base: validUmbrella,
			bad:  `global: {clusterName: ""}`,
			want: []string{"clusterName"},
		},
		{
			name: "clusterName not a DNS label", chart: umbrellaChart, base: validUmbrella,
			bad:  "global: {clusterName: GCP_1}",
			want: []string{"clusterName"},
		},
		{
			name: "remote name not a DNS label", chart: umbrellaChart, base: validUmbrella,
			bad:  "global: {remotes: [{name: AWS_1, server: 'https://aws.example.com', tokenSecret: {name: t, key: token}}]}",
			want: []string{"remotes", "name"},
		},
		{
			name: "remote name too long for a label", chart: umbrellaChart, base: validUmbrella,
			bad:  "global: {remotes: [{name: " + strings.Repeat("a", 64) + ", server: 'https://aws.example.com', tokenSecret: {name: t, key: token}}]}",
			want: []string{"remotes", "name"},
		},
		{
			name: "remote without credentials", chart: umbrellaChart, base: validUmbrella,
			bad:  "global: {remotes: [{name: aws, server: 'https://aws.example.com'}]}",
			want: []string{"remotes", "tokenSecret", "kubeconfigSecret"},
		},
		{
			name: "remote with both credentials", chart: umbrellaChart, base: validUmbrella,
			bad:  "global: {remotes: [{name: aws, server: 'https://aws.example.com', tokenSecret: {name: t, key: token}, kubeconfigSecret: {name: k, key: kubeconfig}}]}",
			want: []string{"remotes/0/kubeconfigSecret"}, // the schema says: not with tokenSecret
		},
		{
			name: "remote with a token and no server", chart: umbrellaChart, base: validUmbrella,
			bad:  "global: {remotes: [{name: aws, tokenSecret: {name: t, key: token}}]}",
			want: []string{"remotes", "server"},
		},
		{
			name: "remote server not https", chart: umbrellaChart, base: validUmbrella,
			bad:  "global: {remotes: [{name: aws, server: 'aws.example.com:6443', tokenSecret: {name: t, key: token}}]}",
			want: []string{"remotes", "server"},
		},
		{
			name: "remote listed twice", chart: umbrellaChart, base: validUmbrella,
			bad: "global: {remotes: [{name: aws, server: 'https://a.example.com', tokenSecret: {name: t, key: token}}," +
				" {name: aws, server: 'https://b.example.com', tokenSecret: {name: u, key: token}}]}",
			want: []string{"remotes", "aws"},
		},
		{
			name: "remote named like the local cluster", chart: umbrellaChart, base: validUmbrella,
			bad:  "global: {remotes: [{name: gcp, server: 'https://gcp.example.com', tokenSecret: {name: t, key: token}}]}",
			want: []string{"gcp"},
		},
		{
			name: "bad calicoAPI", chart: umbrellaChart, base: validUmbrella,
			bad:  "policy: {enabled: true, calicoAPI: projectcalico.org/v1}",
			want: []string{"calicoAPI"},
		},
		{
			name: "unknown top-level key", chart: umbrellaChart, base: validUmbrella,
			bad:  "serviceMirorr: {enabled: true}",
			want: []string{"serviceMirorr"},
		},
		{
			name: "unknown global key", chart: umbrellaChart, base: validUmbrella,
			bad:  "global: {clustername: gcp}",
			want: []string{"clustername"},
		},
		{
			name: "unknown key in a remote", chart: umbrellaChart, base: validUmbrella,
			bad:  "global: {remotes: [{name: aws, server: 'https://aws.example.com', token: abc, tokenSecret: {name: t, key: token}}]}",
			want: []string{"token"},
		},
		{
			name: "unknown key in a subchart", chart: umbrellaChart, base: validUmbrella,
			bad:  "serviceMirror: {enabled: true, replica: 3}",
			want: []string{"replica"},
		},
		{
			name: "unknown key in a subchart's object", chart: umbrellaChart, base: validUmbrella,
			bad:  "wireguard: {enabled: true, serviceMonitor: {enable: true}}",
			want: []string{"enable"},
		},
		{
			name: "enabled not a boolean", chart: umbrellaChart, base: validUmbrella,
			bad:  "wireguard: {enabled: 'yes'}",
			want: []string{"enabled"},
		},
		{
			name: "podCIDRsFrom not a source", chart: umbrellaChart, base: validUmbrella,
			bad:  "wireguard: {podCIDRsFrom: calico}",
			want: []string{"podCIDRsFrom"},
		},
		{
			name: "podCIDRsFrom of a remote not a source", chart: umbrellaChart, base: validUmbrella,
			bad:  "wireguard: {podCIDRsFrom: {aws: ipam}}",
			want: []string{"podCIDRsFrom", "aws"},
		},
		{
			name: "podCIDRsFrom a list", chart: umbrellaChart, base: validUmbrella,
			bad:  "wireguard: {podCIDRsFrom: [calico-ipam]}",
			want: []string{"podCIDRsFrom"},
		},
		{
			name: "podCIDRsFrom a number", chart: umbrellaChart, base: validUmbrella,
			bad:  "wireguard: {podCIDRsFrom: 1}",
			want: []string{"podCIDRsFrom"},
		},
		{
			name: "podCIDRsFrom of a remote not a string", chart: umbrellaChart, base: validUmbrella,
			bad:  "wireguard: {podCIDRsFrom: {aws: true}}",
			want: []string{"podCIDRsFrom", "aws"},
		},
		{
			name: "podCIDRsFrom remote name not a DNS label", chart: umbrellaChart, base: validUmbrella,
			bad:  "wireguard: {podCIDRsFrom: {AWS_1: node}}",
			want: []string{"podCIDRsFrom", "AWS_1"},
		},
		{
			name: "podCIDRsFrom remote name longer than a remote's", chart: umbrellaChart, base: validUmbrella,
			bad:  "wireguard: {podCIDRsFrom: {" + strings.Repeat("a", 57) + ": node}}",
			want: []string{"podCIDRsFrom"},
		},
		{
			name: "consumer name not a DNS label", chart: remoteChart, base: validRemote,
			bad:  "consumers: [{name: GCP_1}]",
			want: []string{"consumers", "name"},
		},
		{
			name: "consumer without a name", chart: remoteChart, base: validRemote,
			bad:  "consumers: [{cluster: gcp}]",
			want: []string{"consumers", "name"},
		},
		{
			name: "consumer listed twice", chart: remoteChart, base: validRemote,
			bad:  "consumers: [{name: gcp}, {name: gcp}]",
			want: []string{"consumers"},
		},
		{
			name: "unknown remote chart key", chart: remoteChart, base: validRemote,
			bad:  "consumer: [{name: gcp}]",
			want: []string{"consumer"},
		},
		{
			name: "unknown component", chart: remoteChart, base: validRemote,
			bad:  "components: {mirror: true}",
			want: []string{"mirror"},
		},
		{
			name: "consumer named like this cluster", chart: remoteChart, base: validRemote,
			bad:  "clusterName: gcp",
			want: []string{"gcp", "clusterName"},
		},
		{
			name: "apiServer not https", chart: remoteChart, base: validRemote,
			bad:  "apiServer: http://aws.example.com",
			want: []string{"apiServer"},
		},
		{
			name: "calicoIPAM not a boolean", chart: remoteChart, base: validRemote,
			bad:  "consumers: [{name: gcp, calicoIPAM: 'yes'}]",
			want: []string{"consumers", "calicoIPAM"},
		},
		{
			name: "calicoIPAM without wireguard", chart: remoteChart, base: validRemote,
			bad:  "consumers: [{name: gcp, calicoIPAM: true}]\ncomponents: {wireguard: false}",
			want: []string{"gcp", "calicoIPAM", "components.wireguard"},
		},
		{
			name: "calicoIPAM binding named like another consumer's", chart: remoteChart, base: validRemote,
			bad:  "consumers: [{name: gcp-calico-ipam}, {name: gcp, calicoIPAM: true}]",
			want: []string{"gcp", "gcp-calico-ipam", "calicoIPAM"},
		},
		{
			name: "no component", chart: remoteChart, base: validRemote,
			bad:  "components: {serviceMirror: false, policy: false, wireguard: false}",
			want: []string{"components"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The base values themselves are valid.
			if _, err := render(t, tt.chart, releaseName, releaseNamespace, valuesOf(t, nil, tt.base)); err != nil {
				t.Fatalf("the valid base values are refused: %v", err)
			}
			_, err := render(t, tt.chart, releaseName, releaseNamespace, valuesOf(t, nil, tt.base, tt.bad))
			if err == nil {
				t.Fatalf("%s is accepted", tt.bad)
			}
			msg := err.Error()
			t.Logf("%s\n-> %s", tt.bad, msg)
			var missing []string
			for _, w := range tt.want {
				if !strings.Contains(strings.ToLower(msg), strings.ToLower(w)) {
					missing = append(missing, w)
				}
			}
			if len(missing) > 0 {
				t.Errorf("the error does not name %q", missing)
			}
			if len(msg) > 1500 {
				t.Errorf("the error is %d characters long; a user reads it in a terminal", len(msg))
			}
		})
	}
}

// The umbrella and every subchart carry the same schema for global values (a subchart is
// installable alone, so it needs its own copy): they must not drift apart.
func TestGlobalSchemaIsTheSameEverywhere(t *testing.T) {
	read := func(path string) any {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), path))
		if err != nil {
			t.Fatal(err)
		}
		var schema struct {
			Properties map[string]any `json:"properties"`
		}
		if err := json.Unmarshal(data, &schema); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return schema.Properties["global"]
	}
	want := read("charts/semaphore/values.schema.json")
	for _, sub := range []string{"service-mirror", "policy", "wireguard"} {
		path := "charts/semaphore/charts/" + sub + "/values.schema.json"
		if diff := cmp.Diff(want, read(path)); diff != "" {
			t.Errorf("%s: global differs from the umbrella's (-umbrella +%s):\n%s", path, sub, diff)
		}
	}
}
