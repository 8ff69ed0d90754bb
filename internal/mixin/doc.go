// Package mixin holds no code: its tests check that the Grafana dashboards (dashboards/) and the
// Prometheus alert rules (alerts/) only use metrics the components really export, read from the
// components' own metric definitions, and that every query parses.
package mixin
