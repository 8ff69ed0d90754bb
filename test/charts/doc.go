// Package charts holds the tests of the Helm charts under charts/: every charts/*/ci scenario
// rendered through the Helm SDK as `helm install` would (dependencies with their conditions and
// aliases, values.schema.json), both charts installed into real API servers, and the
// controllers run with exactly the identities the charts create, to show they need no more.
//
// It lives under components/ to use internal/testenv and the components' own
// configuration and controllers; it has no code of its own besides the tests.
package charts
