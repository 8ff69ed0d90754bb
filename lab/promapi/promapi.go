// Package promapi asks the lab's Prometheus over its HTTP API: whether it is ready, to reload
// its configuration, instant queries, rule groups and alerts. The lab's environment, its
// status and its checks all ask it through here.
package promapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Result is one series of an instant query's result.
type Result struct {
	Metric map[string]string `json:"metric"`
	Value  []any             `json:"value"`
}

// Alert is one alert, pending or firing.
type Alert struct {
	Labels map[string]string `json:"labels"`
	State  string            `json:"state"`
}

// RuleGroup is one group of loaded rules.
type RuleGroup struct {
	Name  string `json:"name"`
	Rules []any  `json:"rules"`
}

// call sends a request without a body to u, giving up after timeout, and returns the response's
// status and (the first 8 MiB of) its body.
func call(ctx context.Context, timeout time.Duration, method, u string) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	return resp.StatusCode, body, nil
}

// Ready tells whether the Prometheus at base answers /-/ready, which it does once it has
// loaded its TSDB and configuration.
func Ready(ctx context.Context, base string) bool {
	code, _, err := call(ctx, 2*time.Second, http.MethodGet, base+"/-/ready")
	return err == nil && code == http.StatusOK
}

// Reload has the Prometheus at base (run with --web.enable-lifecycle) read its configuration
// again.
func Reload(ctx context.Context, base string) error {
	code, body, err := call(ctx, 10*time.Second, http.MethodPost, base+"/-/reload")
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("reloading Prometheus: %d %s: %s", code, http.StatusText(code), body[:min(len(body), 1024)])
	}
	return nil
}

// get gets path from the API of the Prometheus at base and decodes its data as a T.
func get[T any](ctx context.Context, base, path string, params url.Values) (T, error) {
	var out T
	u := base + path
	if params != nil {
		u += "?" + params.Encode()
	}
	code, body, err := call(ctx, 5*time.Second, http.MethodGet, u)
	if err != nil {
		return out, err
	}
	var r struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return out, fmt.Errorf("%s: %d: %s", path, code, strings.TrimSpace(string(body)))
	}
	if r.Status != "success" {
		return out, fmt.Errorf("%s", r.Error)
	}
	return out, json.Unmarshal(r.Data, &out)
}

// Query runs an instant query.
func Query(ctx context.Context, base, query string) ([]Result, error) {
	data, err := get[struct {
		Result []Result `json:"result"`
	}](ctx, base, "/api/v1/query", url.Values{"query": {query}})
	return data.Result, err
}

// Alerts are the alerts pending or firing now.
func Alerts(ctx context.Context, base string) ([]Alert, error) {
	data, err := get[struct {
		Alerts []Alert `json:"alerts"`
	}](ctx, base, "/api/v1/alerts", nil)
	return data.Alerts, err
}

// Rules are the rule groups loaded.
func Rules(ctx context.Context, base string) ([]RuleGroup, error) {
	data, err := get[struct {
		Groups []RuleGroup `json:"groups"`
	}](ctx, base, "/api/v1/rules", nil)
	return data.Groups, err
}
