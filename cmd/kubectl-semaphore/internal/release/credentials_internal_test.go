package release

import (
	"errors"
	"strings"
	"testing"
)

// The files a remote's kubeconfig names are the pods' files: they are read from the volume,
// and a file of this machine (one that exists here, /etc/hostname) is never read in their stead.
// A user with an exec plugin or an auth-provider is refused unless allowed.
func TestKubeconfigFromASecretReadsOnlyTheVolume(t *testing.T) {
	kubeconfig := func(cluster, user string) []byte {
		return []byte("apiVersion: v1\nkind: Config\ncurrent-context: r\ncontexts: [{name: r, context: {cluster: r, user: r}}]\n" +
			"clusters: [{name: r, cluster: {server: 'https://r.example:6443', " + cluster + "}}]\nusers: [{name: r, user: {" + user + "}}]\n")
	}
	cfg, err := configFromFiles(map[string][]byte{
		"kubeconfig": kubeconfig("certificate-authority: ca.crt", "tokenFile: ./token, client-certificate: tls.crt, client-key: tls.key"),
		"ca.crt":     []byte("CA"), "token": []byte("TOKEN"), "tls.crt": []byte("CERT"), "tls.key": []byte("KEY"),
	}, CredentialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(cfg.CAData) != "CA" || cfg.BearerToken != "TOKEN" || string(cfg.CertData) != "CERT" || string(cfg.KeyData) != "KEY" ||
		cfg.CAFile != "" || cfg.BearerTokenFile != "" || cfg.CertFile != "" || cfg.KeyFile != "" {
		t.Errorf("config %+v: want every file read from the volume, none left to read here", cfg)
	}

	for _, kc := range [][]byte{
		kubeconfig("certificate-authority: /etc/hostname", "token: t"),
		kubeconfig("insecure-skip-tls-verify: true", "tokenFile: /etc/hostname"),
		kubeconfig("insecure-skip-tls-verify: true", "client-certificate: /etc/hostname, client-key: /etc/hostname"),
	} {
		if _, err := configFromFiles(map[string][]byte{"kubeconfig": kc}, CredentialOptions{}); err == nil || !strings.Contains(err.Error(), "/etc/hostname, which the volume does not hold") {
			t.Errorf("a kubeconfig naming a file of this machine: %v, want it refused\n%s", err, kc)
		}
	}

	exec := map[string][]byte{"kubeconfig": kubeconfig("insecure-skip-tls-verify: true", "exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/true, interactiveMode: Never}")}
	var runs *RunsHereError
	if _, err := configFromFiles(exec, CredentialOptions{}); !errors.As(err, &runs) || !strings.Contains(err.Error(), `exec credential plugin "/bin/true"`) {
		t.Errorf("an exec plugin: %v, want a RunsHereError naming it", err)
	}
	if cfg, err := configFromFiles(exec, CredentialOptions{AllowExecPlugins: true}); err != nil || cfg.ExecProvider == nil {
		t.Errorf("an exec plugin, allowed: %v", err)
	}
}
