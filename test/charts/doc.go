// Package charts drives the Helm charts under charts/ through the Helm SDK, as `helm install`
// would (dependencies with their conditions and aliases, values.schema.json): Load, Render,
// Install, and a parsed Manifest with the workloads, pods' environments and projected files the
// charts make. The lab installs and inspects the charts with it.
//
// Its tests render every charts/*/ci scenario, refuse bad values (testdata/bad-values.yaml),
// install both charts into real API servers, and run the controllers with exactly the
// identities the charts create, to show they need no more.
package charts
