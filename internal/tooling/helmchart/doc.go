// Package helmchart drives the Helm charts under charts/ through the Helm SDK, as `helm install`
// would (dependencies with their conditions and aliases, values.schema.json): Load, Render,
// Install, and a parsed Manifest with the workloads, pods' environments and projected files the
// charts make. The lab installs and inspects the charts with it, and the chart tests in
// test/charts render and install them with it.
package helmchart
