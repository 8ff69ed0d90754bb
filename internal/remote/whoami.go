package remote

import (
	"context"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// WhoAmI is the user client authenticates as (a SelfSubjectReview), for checks that a
// credential is the identity it should be. host, the server client talks to, is added to an
// error that does not name it already, so that the error says which cluster refused.
func WhoAmI(ctx context.Context, client kubernetes.Interface, host string) (string, error) {
	review, err := client.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		if host != "" && !strings.Contains(err.Error(), host) {
			return "", &hostError{host: host, err: err}
		}
		return "", err
	}
	return review.Status.UserInfo.Username, nil
}

// hostError is an error of the API server at host.
type hostError struct {
	host string
	err  error
}

func (e *hostError) Error() string { return e.host + ": " + e.err.Error() }
func (e *hostError) Unwrap() error { return e.err }
