package remote

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// learnIdentity asks a remote that just answered who the component is there, unless it was
// asked since the remote last failed: one SelfSubjectReview when it first answers and one after
// each outage (its token may have been replaced meanwhile), not one per probe. The answer
// replaces the remote's <prefix>_remote_identity_info series. A remote that cannot say (no
// SelfSubjectReview API) is logged and asked again only after its next failure.
func (h *Health) learnIdentity(ctx context.Context, name string) {
	h.mu.Lock()
	s := h.remotes[name]
	if !s.askWho {
		h.mu.Unlock()
		return
	}
	s.askWho = false
	whoAmI := s.whoAmI
	h.mu.Unlock()

	wctx, cancel := context.WithTimeout(ctx, h.timeout)
	user, err := whoAmI(wctx)
	cancel()
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case ctx.Err() != nil:
		s.askWho = true // cut short by shutdown: says nothing
	case err != nil:
		h.log.Warn("remote does not say who we are", "remote", name, "err", err)
	default:
		h.identity.DeletePartialMatch(prometheus.Labels{"remote": name})
		h.identity.WithLabelValues(name, user).Set(1)
	}
}

// forgetIdentity records a failed probe of a remote: who the component is there is asked again
// once it answers, and a remote that rejects the credentials (401) no longer knows the user
// exported, so the series goes. h.mu must be held.
func (h *Health) forgetIdentity(name string, s *remoteState, err error) {
	s.askWho = s.whoAmI != nil
	if apierrors.IsUnauthorized(err) {
		h.identity.DeletePartialMatch(prometheus.Labels{"remote": name})
	}
}
