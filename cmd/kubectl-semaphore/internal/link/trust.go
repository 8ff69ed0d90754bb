package link

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/release"
)

// A remote answers for itself: its link ConfigMap says its name, and whoever installed
// semaphore-remote chose it. So link writes under a name only when the user expects that name
// (Options.RemoteName), and it does not move an entry the consumer already has for that name to
// another server or CA (another cluster answering under the same name) unless told to
// (Options.Force). A new token for the same server and CA, a rotation, needs neither.

// known is what the consumer already has for a remote: its server and CA, and where that is.
type known struct {
	where  string
	server string
	ca     []byte
}

// checkName refuses a remote that calls itself other than the user expects.
func checkName(o Options, remote *Remote, where string) error {
	if o.RemoteName == "" {
		return fmt.Errorf("the name of the remote cluster is not given (--remote-name): link does not take %s's word for it", where)
	}
	if remote.clusterName != o.RemoteName {
		return fmt.Errorf("%s says it is cluster %q, not %q (--remote-name): is --from the cluster you mean? Nothing was written; if the remote is named %q, pass --remote-name %s",
			where, remote.clusterName, o.RemoteName, remote.clusterName, remote.clusterName)
	}
	return nil
}

// knownEntries are what the values file o.ValuesFile and the semaphore release in o.To (its
// controllers' kubeconfigs of the remote) have for remote name.
func knownEntries(ctx context.Context, o Options, name string) ([]known, error) {
	var out []known
	if o.ValuesFile != "" {
		e, err := EntryIn(o.ValuesFile, name)
		if err != nil {
			return nil, err
		}
		if e != nil {
			ca, err := base64.StdEncoding.DecodeString(e.CAData)
			if err != nil {
				ca = []byte(e.CAData) // then it differs from any CA, as it should
			}
			out = append(out, known{where: "the values file " + o.ValuesFile, server: e.Server, ca: ca})
		}
	}
	components, err := release.Find(ctx, o.To, o.Namespace)
	if err != nil {
		return nil, fmt.Errorf("context %s: %w", o.ToContext, err)
	}
	// Each controller has its own kubeconfig Secret; they differ only when edited by hand.
	var fromRelease []known
	var secrets [][]string
	for _, c := range components {
		if !slices.Contains(c.RemoteNames(), name) {
			continue
		}
		server, ca, from, err := c.RemoteCluster(ctx, o.To, name)
		if err != nil {
			return nil, fmt.Errorf("context %s: what the semaphore release has for remote %s: %w", o.ToContext, name, err)
		}
		k := known{server: server, ca: ca}
		i := slices.IndexFunc(fromRelease, func(e known) bool { return len(e.changes(server, ca)) == 0 })
		if i < 0 {
			i = len(fromRelease)
			fromRelease, secrets = append(fromRelease, k), append(secrets, nil)
		}
		secrets[i] = append(secrets[i], from...)
	}
	for i, k := range fromRelease {
		k.where = fmt.Sprintf("the semaphore release in context %s (Secrets %s)", o.ToContext, strings.Join(secrets[i], ", "))
		out = append(out, k)
	}
	return out, nil
}

// changes say how server and ca differ from what k has.
func (k known) changes(server string, ca []byte) []string {
	var out []string
	if strings.TrimSuffix(k.server, "/") != strings.TrimSuffix(server, "/") {
		out = append(out, fmt.Sprintf("the server %s where %s has %s", server, k.where, k.server))
	}
	if !bytes.Equal(bytes.TrimSpace(k.ca), bytes.TrimSpace(ca)) {
		out = append(out, fmt.Sprintf("another CA than %s has", k.where))
	}
	return out
}

// checkSameRemote refuses, unless o.Force, to hand the consumer a server or CA for remote
// other than those it already has under that name. With o.Force, it says what changes.
func checkSameRemote(ctx context.Context, o Options, remote *Remote, ca []byte, where string) (notes []string, err error) {
	entries, err := knownEntries(ctx, o, remote.clusterName)
	if err != nil {
		if o.Force {
			return []string{fmt.Sprintf("--force: not compared with what the consumer has for %s: %v", remote.clusterName, err)}, nil
		}
		return nil, fmt.Errorf("%w: link cannot tell whether %s is the remote the consumer already knows as %s; nothing was written (--force links anyway)", err, where, remote.clusterName)
	}
	for _, k := range entries {
		diff := strings.Join(k.changes(remote.apiServer, ca), ", and ")
		switch {
		case diff == "":
		case o.Force:
			notes = append(notes, fmt.Sprintf("--force: remote %s changes: %s", remote.clusterName, diff))
		default:
			return nil, fmt.Errorf("%s hands out for remote %s %s: another cluster answering under that name? Nothing was written; if %s did move (a new address or CA), run link again with --force",
				where, remote.clusterName, diff, remote.clusterName)
		}
	}
	return notes, nil
}
