package check

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/release"
)

// serviceAccountUser starts the user name of every ServiceAccount.
const serviceAccountUser = "system:serviceaccount:"

// expected is who a component's credentials for a remote should be there.
type expected struct {
	// user is the exact user, or, when empty, any ServiceAccount named name.
	user, name string
	// from says where the expectation comes from, for messages.
	from string
}

func (e expected) matches(user string) bool {
	if e.user != "" {
		return user == e.user
	}
	return strings.HasPrefix(user, serviceAccountUser) && strings.HasSuffix(user, ":"+e.name)
}

func (e expected) String() string {
	if e.user != "" {
		return e.user
	}
	return "the ServiceAccount " + e.name
}

// secretsSay is what the Secrets the component's pods mount say of a remote: the host of its
// API server (host:port, as the pods' client metrics label it; hostErr when not known) and who the
// credentials should be there. They are only read: nothing connects, nothing runs.
type secretsSay struct {
	host    string
	hostErr error
	want    expected
}

// readSecrets reads what the Secrets of c say of remote. Who the credentials should be is the
// ServiceAccount of the token they hold (its subject), else any ServiceAccount named as
// semaphore-remote names this cluster's consumer (semaphore-remote-<this cluster>).
func (k *checker) readSecrets(ctx context.Context, c release.Component, remote string) secretsSay {
	say := secretsSay{want: expected{name: "semaphore-remote-" + c.LocalCluster(),
		from: "the consumer's ServiceAccount semaphore-remote makes for this cluster"}}
	r, err := c.Remote(ctx, k.client, remote, release.CredentialOptions{})
	server := ""
	if err == nil {
		server = r.Config.Host
		if sub := tokenSubject(r.Config.BearerToken); strings.HasPrefix(sub, serviceAccountUser) {
			say.want = expected{user: sub, from: fmt.Sprintf("the ServiceAccount of the token in Secrets %v", r.Secrets)}
		}
	} else if server, _, _, err = c.RemoteCluster(ctx, k.client, remote); err != nil {
		say.hostErr = err
		return say
	}
	u, err := url.Parse(server)
	if err != nil || u.Host == "" {
		say.hostErr = fmt.Errorf("remote %s: server %q of the kubeconfig is not a URL", remote, server)
		return say
	}
	say.host = u.Host
	return say
}

// tokenSubject is the subject of a JWT (a ServiceAccount token's is its user), read without
// verifying it; "" when token is not a JWT.
func tokenSubject(token string) string {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return ""
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return ""
	}
	var claims struct {
		Subject string `json:"sub"`
	}
	if json.Unmarshal(payload, &claims) != nil {
		return ""
	}
	return claims.Subject
}

// checkIdentity compares who the pods say they are at remote (remote_identity_info, from the
// SelfSubjectReview they ask when it answers) with who they should be.
func checkIdentity(v controllers, remote, host string, want expected, res Result) Result {
	family := v.metric("remote_identity_info")
	var older, unknown, rejected, wrong, right []string
	for _, p := range v.readable() {
		where := v.where(p)
		if !p.metrics.Has(family) {
			older = append(older, where)
			continue
		}
		found := p.metrics.Where(family, "remote", remote)
		switch {
		case len(found) > 0 && want.matches(found[0].Labels["user"]):
			right = append(right, where)
		case len(found) > 0:
			wrong = append(wrong, fmt.Sprintf("%s is %s", where, found[0].Labels["user"]))
		case rejections(v, p, host) > 0:
			rejected = append(rejected, fmt.Sprintf("%s (%d requests answered 401)", where, int(rejections(v, p, host))))
		default:
			unknown = append(unknown, where)
		}
	}
	switch {
	case len(rejected) > 0:
		return fail(res, "check-identity", "remote %s rejects the credentials of %s (401 Unauthorized, and it says nothing of who they are): the consumer's token was revoked, rotated or has expired; run kubectl semaphore link again to copy the current one",
			remote, most(rejected, 5))
	case len(wrong) > 0:
		return fail(res, "check-identity", "at remote %s, %s; want %s (%s)", remote, most(wrong, 5), want, want.from)
	case len(unknown) > 0:
		return warnRunbook(res, "check-identity", "who %s are at remote %s is not known: it has not answered them since they started, or cannot say (no SelfSubjectReview API)", most(unknown, 5), remote)
	case len(older) > 0:
		return warnRunbook(res, "check-identity", "%s export no %s (a version before it): who they are at remote %s is not known here; --probe-remotes asks the remote from this machine", most(older, 5), family, remote)
	}
	return pass(res, "%d pods are %s at remote %s (%s)", len(right), want, remote, want.from)
}
