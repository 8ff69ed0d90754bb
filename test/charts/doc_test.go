// The chart tests render every charts/*/ci scenario, refuse bad values (testdata/bad-values.yaml),
// install both charts into real API servers, and run the controllers with exactly the
// identities the charts create, to show they need no more.
package charts_test
