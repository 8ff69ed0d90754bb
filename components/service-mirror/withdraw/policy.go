// Package withdraw is the outage policy of mirrored endpoints: after a remote has gone a set
// time without a successful sync, its endpoints (in mirrors and in global services) are marked
// not ready, so kube-proxy stops sending traffic to them and global services fail over to the
// other clusters; when the remote answers again they come back at once.
package withdraw

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/kube-semaphore/semaphore/internal/remotepairs"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/utils/ptr"
)

// Policy says, per remote, after how long without a successful sync its endpoints are
// withdrawn. The zero Policy never withdraws anything.
type Policy struct {
	// Default applies to the remotes not in PerRemote; 0 means never.
	Default time.Duration
	// PerRemote overrides Default for the named remotes.
	PerRemote map[string]time.Duration
}

// Decode parses "", "<duration>", "<remote>:<duration>,..." or both ("5m,aws:1m"): a bare
// duration is the default of every remote, pairs override it. It implements envconfig.Decoder.
func (p *Policy) Decode(value string) error {
	*p = Policy{}
	for _, item := range remotepairs.Split(value) {
		d, err := time.ParseDuration(item.Value)
		if err != nil {
			return fmt.Errorf("%q: not a duration (want e.g. 5m or aws:5m)", item.Text)
		}
		if d <= 0 {
			return fmt.Errorf("%q: must be positive", item.Text)
		}
		if err := p.set(item.Remote, d); err != nil {
			return err
		}
	}
	return nil
}

func (p *Policy) set(remote string, d time.Duration) error {
	if remote == "" {
		if p.Default != 0 {
			return fmt.Errorf("more than one default duration")
		}
		p.Default = d
		return nil
	}
	if p.PerRemote == nil {
		p.PerRemote = map[string]time.Duration{}
	}
	if _, dup := p.PerRemote[remote]; dup {
		return fmt.Errorf("remote %q given twice", remote)
	}
	p.PerRemote[remote] = d
	return nil
}

// CheckRemotes reports a remote named in the policy that is not one of remotes.
func (p Policy) CheckRemotes(remotes []string) error {
	for _, name := range slices.Sorted(maps.Keys(p.PerRemote)) {
		if !slices.Contains(remotes, name) {
			return fmt.Errorf("remote %q is not in SEMAPHORE_REMOTES", name)
		}
	}
	return nil
}

// after is how long remote may go without a successful sync before its endpoints are
// withdrawn; 0 means never.
func (p Policy) after(remote string) time.Duration {
	if d, ok := p.PerRemote[remote]; ok {
		return d
	}
	return p.Default
}

// String is the policy as Decode reads it.
func (p Policy) String() string {
	var parts []string
	if p.Default != 0 {
		parts = append(parts, p.Default.String())
	}
	for _, name := range slices.Sorted(maps.Keys(p.PerRemote)) {
		parts = append(parts, name+":"+p.PerRemote[name].String())
	}
	return strings.Join(parts, ",")
}

// Endpoints marks every endpoint of slices not ready and not serving, in place: the slices
// must be the caller's own (desired) objects. Terminating is left as the source says.
func Endpoints(slices []*discoveryv1.EndpointSlice) []*discoveryv1.EndpointSlice {
	for _, s := range slices {
		for i := range s.Endpoints {
			s.Endpoints[i].Conditions.Ready = ptr.To(false)
			s.Endpoints[i].Conditions.Serving = ptr.To(false)
		}
	}
	return slices
}
